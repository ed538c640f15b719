"""Signals extracted from job logs at the edge, so rules never grep raw lines."""

from enum import StrEnum
from typing import Literal

from pydantic import AwareDatetime, Field

from schemas.envelope import Event, Payload
from schemas.registry import event


class LogLine(Payload):
    at: AwareDatetime | None = Field(default=None, description="Timestamp parsed from the line.")
    line: str
    node: str | None = None
    rank: int | None = None
    stream: Literal["stdout", "stderr"] = "stdout"


class LogLinesObservedPayload(Payload):
    path: str | None = Field(default=None, description="File the lines came from.")
    lines: tuple[LogLine, ...] = Field(min_length=1)


@event(topic="logs")
class LogLinesObserved(Event):
    """A run of raw lines of one job; travels batched (see schemas.codec.encode_batch)."""

    type: Literal["LogLinesObserved"] = "LogLinesObserved"
    payload: LogLinesObservedPayload


class LogSignal(StrEnum):
    TRAINING_COMPLETE = "TRAINING_COMPLETE"
    NCCL_ERROR = "NCCL_ERROR"
    NCCL_TIMEOUT = "NCCL_TIMEOUT"
    CUDA_ERROR = "CUDA_ERROR"
    OOM = "OOM"
    TRACEBACK = "TRACEBACK"
    NATIVE_CRASH = "NATIVE_CRASH"  # SIGSEGV and kin, "Fatal Python error"
    WORKER_FAILED = "WORKER_FAILED"  # a launcher's summary: ChildFailedError, srun task exits
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
