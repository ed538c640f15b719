"""The TrainingJob: what the stream knows about one job, folded purely from its events."""

from __future__ import annotations

from datetime import datetime
from functools import singledispatch

from pydantic import BaseModel, ConfigDict

from schemas.envelope import Event
from schemas.events import CheckpointSaved, JobExited, JobState, LogSignal, LogSignalDetected


class Attempt(BaseModel):
    model_config = ConfigDict(frozen=True)

    number: int
    state: JobState
    exit_code: int | None
    nodes: tuple[str, ...]
    ended_at: datetime


class TrainingJob(BaseModel):
    model_config = ConfigDict(frozen=True)

    job_id: str
    cluster: str
    completion_seen: bool = False
    last_checkpoint_uri: str | None = None
    last_checkpoint_step: int | None = None
    attempts: tuple[Attempt, ...] = ()
    updated_at: datetime | None = None

    @classmethod
    def new(cls, event: Event) -> TrainingJob:
        return cls(job_id=event.subject, cluster=event.cluster)


def apply(state: TrainingJob | None, event: Event) -> TrainingJob:
    """Fold one event into the job; events this fold does not know leave it unchanged."""
    current = state or TrainingJob.new(event)
    folded = _fold(event, current)
    return folded.model_copy(update={"updated_at": event.occurred_at})


@singledispatch
def _fold(event: Event, state: TrainingJob) -> TrainingJob:
    return state


@_fold.register
def _(event: CheckpointSaved, state: TrainingJob) -> TrainingJob:
    step = state.last_checkpoint_step
    if step is not None and event.payload.step < step:
        return state  # a late, older checkpoint must not move the resume point backwards
    return state.model_copy(
        update={
            "last_checkpoint_uri": event.payload.uri,
            "last_checkpoint_step": event.payload.step,
        }
    )


@_fold.register
def _(event: LogSignalDetected, state: TrainingJob) -> TrainingJob:
    if event.payload.signal is LogSignal.TRAINING_COMPLETE:
        return state.model_copy(update={"completion_seen": True})
    return state


@_fold.register
def _(event: JobExited, state: TrainingJob) -> TrainingJob:
    p = event.payload
    if any(a.number == p.attempt for a in state.attempts):
        return state  # redelivered exit of an attempt already folded
    attempt = Attempt(
        number=p.attempt,
        state=p.state,
        exit_code=p.exit_code,
        nodes=p.nodes,
        ended_at=event.occurred_at,
    )
    return state.model_copy(update={"attempts": (*state.attempts, attempt)})
