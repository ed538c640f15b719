"""Job lifecycle events, in scheduler-agnostic terms (the raw scheduler state rides along)."""

from enum import StrEnum
from typing import Literal

from pydantic import Field

from schemas.envelope import Event, Payload
from schemas.limits import (
    COMMAND,
    INT64_MAX,
    INT64_MIN,
    MAP_ENTRIES,
    NAME,
    SUBJECT,
    TEXT,
    UINT32_MAX,
    Key,
    MapValue,
    Nodes,
)
from schemas.registry import event


class JobState(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    PREEMPTED = "PREEMPTED"
    CANCELLED = "CANCELLED"
    UNKNOWN = "UNKNOWN"


# How an attempt can end. PREEMPTED and CANCELLED end it too, but are never a failure.
TERMINAL_STATES = frozenset(
    {JobState.SUCCEEDED, JobState.FAILED, JobState.PREEMPTED, JobState.CANCELLED}
)


class CompletionHook(Payload):
    """A follow-up the job declares: release a held job when this one ends so."""

    when: Literal["succeeded", "failed", "ended"] = Field(
        default="succeeded",
        description="succeeded: an attempt exits SUCCEEDED; failed: an attempt fails; ended: an "
        "attempt ends any way but preempted.",
    )
    release: str = Field(
        min_length=1, max_length=SUBJECT, description="Scheduler-qualified id of a held job."
    )


class JobSubmittedPayload(Payload):
    name: str | None = Field(default=None, max_length=NAME)
    user: str | None = Field(default=None, max_length=NAME)
    queue: str | None = Field(
        default=None, max_length=NAME, description="Partition, namespace or Ray cluster."
    )
    nodes_requested: int | None = Field(default=None, ge=0, le=INT64_MAX)
    gpus_requested: int | None = Field(default=None, ge=0, le=INT64_MAX)
    command: str | None = Field(default=None, max_length=COMMAND)
    raw: dict[Key, MapValue] = Field(
        default_factory=dict, max_length=MAP_ENTRIES, description="Scheduler-specific extras."
    )
    hooks: tuple[CompletionHook, ...] = Field(
        default=(), max_length=16, description="Follow-ups to release when the job ends."
    )


@event(topic="jobs")
class JobSubmitted(Event):
    type: Literal["JobSubmitted"] = "JobSubmitted"
    payload: JobSubmittedPayload


class JobStateChangedPayload(Payload):
    state: JobState
    raw_state: str = Field(
        max_length=NAME, description="The scheduler's own word, e.g. NODE_FAIL or OOMKilled."
    )
    previous_state: JobState | None = None
    attempt: int = Field(default=1, ge=1, le=UINT32_MAX)
    nodes: Nodes = ()
    reason: str | None = Field(default=None, max_length=TEXT)


@event(topic="jobs")
class JobStateChanged(Event):
    type: Literal["JobStateChanged"] = "JobStateChanged"
    payload: JobStateChangedPayload


class JobExitedPayload(Payload):
    state: JobState = Field(description="How the attempt ended.")
    raw_state: str | None = Field(
        default=None, max_length=NAME, description="The scheduler's own word for it."
    )
    exit_code: int | None = Field(default=None, ge=INT64_MIN, le=INT64_MAX)
    signal: int | None = Field(default=None, ge=0, le=255)
    reason: str | None = Field(default=None, max_length=TEXT)
    attempt: int = Field(default=1, ge=1, le=UINT32_MAX)
    nodes: Nodes = ()
    gpus: int = Field(default=0, ge=0, le=UINT32_MAX)
    requeued: bool = Field(
        default=False,
        description="The scheduler itself started another attempt of the job after this one "
        "(a requeue seen between two looks, a controller's own retry): the job went on, and "
        "restarting it again would only end the attempt that followed.",
    )


@event(topic="jobs")
class JobExited(Event):
    """One attempt of a job ended; `subject` is the scheduler-qualified job id."""

    type: Literal["JobExited"] = "JobExited"
    payload: JobExitedPayload


def is_failure(p: JobExitedPayload) -> bool:
    """A failure counts against the nodes it ran on; preemption and cancellation never do, and
    an UNKNOWN end counts only with a non-zero exit code."""
    if p.state is JobState.FAILED:
        return True
    return p.state is JobState.UNKNOWN and p.exit_code not in (None, 0)
