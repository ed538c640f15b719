"""Job lifecycle events, in scheduler-agnostic terms (the raw scheduler state rides along)."""

from enum import StrEnum
from typing import Literal

from pydantic import Field

from schemas.envelope import Event, Payload
from schemas.registry import event


class JobState(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    PREEMPTED = "PREEMPTED"
    CANCELLED = "CANCELLED"
    UNKNOWN = "UNKNOWN"


class CompletionHook(Payload):
    """A follow-up the job declares: release a held job when this one ends so."""

    when: Literal["succeeded", "failed", "ended"] = Field(
        default="succeeded",
        description="succeeded: an attempt exits SUCCEEDED; failed: an attempt fails; ended: an "
        "attempt ends any way but preempted.",
    )
    release: str = Field(
        min_length=1, max_length=512, description="Scheduler-qualified id of a held job."
    )


class JobSubmittedPayload(Payload):
    name: str | None = None
    user: str | None = None
    queue: str | None = Field(default=None, description="Partition, namespace or Ray cluster.")
    nodes_requested: int | None = Field(default=None, ge=0)
    gpus_requested: int | None = Field(default=None, ge=0)
    command: str | None = None
    raw: dict[str, str] = Field(default_factory=dict, description="Scheduler-specific extras.")
    hooks: tuple[CompletionHook, ...] = Field(
        default=(), max_length=16, description="Follow-ups to release when the job ends."
    )


@event(topic="jobs")
class JobSubmitted(Event):
    type: Literal["JobSubmitted"] = "JobSubmitted"
    payload: JobSubmittedPayload


class JobStateChangedPayload(Payload):
    state: JobState
    raw_state: str = Field(description="The scheduler's own word, e.g. NODE_FAIL or OOMKilled.")
    previous_state: JobState | None = None
    attempt: int = Field(default=1, ge=1)
    nodes: tuple[str, ...] = ()
    reason: str | None = None


@event(topic="jobs")
class JobStateChanged(Event):
    type: Literal["JobStateChanged"] = "JobStateChanged"
    payload: JobStateChangedPayload


class JobExitedPayload(Payload):
    state: JobState = Field(description="How the attempt ended.")
    raw_state: str | None = Field(default=None, description="The scheduler's own word for it.")
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None
    attempt: int = Field(default=1, ge=1)
    nodes: tuple[str, ...] = ()
    gpus: int = Field(default=0, ge=0)


@event(topic="jobs")
class JobExited(Event):
    """One attempt of a job ended; `subject` is the scheduler-qualified job id."""

    type: Literal["JobExited"] = "JobExited"
    payload: JobExitedPayload
