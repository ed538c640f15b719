"""Signals extracted from job logs at the edge, so rules never grep raw lines."""

from enum import StrEnum
from typing import Literal

from pydantic import Field

from schemas.envelope import Event, Payload
from schemas.limits import INT32_MAX, LOG_LINE, LOG_LINES, NODE_NAME, TEXT, Timestamp
from schemas.registry import event


class LogLine(Payload):
    at: Timestamp | None = Field(default=None, description="Timestamp parsed from the line.")
    line: str = Field(max_length=LOG_LINE)
    node: str | None = Field(default=None, max_length=NODE_NAME)
    rank: int | None = Field(default=None, ge=0, le=INT32_MAX)
    stream: Literal["stdout", "stderr"] = "stdout"


class LogLinesObservedPayload(Payload):
    path: str | None = Field(default=None, max_length=TEXT, description="File the lines came from.")
    lines: tuple[LogLine, ...] = Field(min_length=1, max_length=LOG_LINES)


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
    NODE_LOST = "NODE_LOST"  # a node of the job died or was preempted (Ray says so in words)
    COORDINATION_ERROR = "COORDINATION_ERROR"  # c10d store, rendezvous, JAX coordination service
    TPU_ERROR = "TPU_ERROR"  # a TPU core halted
    XLA_ERROR = "XLA_ERROR"  # the XLA runtime failed an execution (JAX's XlaRuntimeError)
    CUSTOM = "CUSTOM"


class LogSignalDetectedPayload(Payload):
    signal: LogSignal
    line: str = Field(max_length=LOG_LINE)
    node: str | None = Field(default=None, max_length=NODE_NAME)
    rank: int | None = Field(default=None, ge=0, le=INT32_MAX)
    pattern: str | None = Field(default=None, max_length=TEXT)
    peer: str | None = Field(
        default=None,
        max_length=NODE_NAME,
        description="The host or address the line names as the end that failed (NCCL's "
        "`Got completion from peer 10.0.0.12<port>`, mpirun's `process rank 0 … on node fl98 "
        "exited on signal 11`), as written.",
    )


@event(topic="jobs")
class LogSignalDetected(Event):
    type: Literal["LogSignalDetected"] = "LogSignalDetected"
    payload: LogSignalDetectedPayload
