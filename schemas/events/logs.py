"""Signals extracted from job logs at the edge, so rules never grep raw lines."""

from enum import StrEnum
from typing import Literal

from schemas.envelope import Event, Payload
from schemas.registry import event


class LogSignal(StrEnum):
    TRAINING_COMPLETE = "TRAINING_COMPLETE"
    NCCL_ERROR = "NCCL_ERROR"
    NCCL_TIMEOUT = "NCCL_TIMEOUT"
    CUDA_ERROR = "CUDA_ERROR"
    OOM = "OOM"
    TRACEBACK = "TRACEBACK"
    CUSTOM = "CUSTOM"


class LogSignalDetectedPayload(Payload):
    signal: LogSignal
    line: str
    node: str | None = None
    rank: int | None = None
    pattern: str | None = None


@event(topic="jobs")
class LogSignalDetected(Event):
    type: Literal["LogSignalDetected"] = "LogSignalDetected"
    payload: LogSignalDetectedPayload
