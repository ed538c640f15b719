"""The TrainingJob: what the stream knows about one job, folded purely from its events.

Every fold is idempotent under redelivery (attempts and restarts are keyed by attempt number,
checkpoints only move forward, time accounting only moves forward), because an at-least-once
consumer may fold an event into a state that already contains it.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from functools import singledispatch
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.envelope import Event
from schemas.events import (
    CheckpointSaved,
    CollectivesTimed,
    CompletionHook,
    JobExited,
    JobState,
    JobStateChanged,
    JobSubmitted,
    LogSignal,
    LogSignalDetected,
    RestartJob,
    StepTimesObserved,
)
from schemas.events.jobs import is_failure
from schemas.groups import JOBS, Facts
from streams.state.bounds import (
    ATTEMPT_NODES_BYTES_KEPT,
    ATTEMPT_NODES_KEPT,
    ATTEMPTS_KEPT,
    JOB_NODES_KEPT,
    NODES_BYTES_KEPT,
    RESTARTS_KEPT,
    clip,
    node_ids,
)
from streams.state.dispatch import by_type
from streams.state.internal import JobActionReported, JobNodesImplicated
from streams.state.pace import CHECKPOINTS_KEPT, HostSteps, pace_s, steps_after
from streams.state.stamp import Entity, stamped
from streams.state.waits import Waits, waits_after


class Attempt(BaseModel):
    model_config = ConfigDict(frozen=True)

    number: int
    state: JobState
    exit_code: int | None
    nodes: tuple[str, ...]
    ended_at: datetime
    started_at: datetime | None = None
    completed: bool = False  # the attempt logged its completion line


class RestartRecord(BaseModel):
    """A restart this brain requested (its own `RestartJob`, folded back into the job), and
    what the action worker reported: `requested` until the requeue succeeded or failed."""

    model_config = ConfigDict(frozen=True)

    attempt: int
    at: datetime
    trigger_id: uuid.UUID
    outcome: Literal["requested", "requeued", "failed"] = "requested"
    error: str | None = None


class Implicated(BaseModel):
    """A node a quarantine took out while this job ran (or failed) there: restarts avoid it."""

    model_config = ConfigDict(frozen=True)

    node: str
    reason: str
    at: datetime
    trigger_id: uuid.UUID


IMPLICATED_KEPT = 64


class TrainingJob(Entity):
    """One job across all its attempts.

    Goodput accounting, in event time, over the attempts seen running:

    - *productive* time is running time whose work survived: from an attempt's start (or its
      previous checkpoint) to each checkpoint saved, and to the end of an attempt that logged
      its completion;
    - *lost* time is running time whose work was thrown away — from the last checkpoint (or
      the start) to the end of an attempt that failed, was preempted or exited without
      completing — plus the gap between an attempt's end and the next attempt's start;
    - a cancelled attempt's tail counts as neither (a user's choice, not a loss);
    - `goodput = productive / (productive + lost)`, None until either is non-zero.
    """

    model_config = ConfigDict(frozen=True)

    job_id: str
    cluster: str
    name: str | None = None  # as submitted: what job classes (rule scopes) select by
    user: str | None = None
    queue: str | None = None  # Slurm partition, Kubernetes namespace, Ray cluster
    nodes_requested: int | None = None
    state: JobState | None = None
    attempt: int = 0
    nodes: tuple[str, ...] = ()
    # Completion is per attempt: a completion line seen in the attempt now running (0: before
    # any attempt was reported) waits here for that attempt's exit, which takes it.
    completion_attempt: int | None = None
    last_checkpoint_uri: str | None = None
    last_checkpoint_step: int | None = None
    last_checkpoint_at: datetime | None = None
    attempts: tuple[Attempt, ...] = ()
    attempts_started: int = 0
    failures: int = 0
    preemptions: int = 0
    cancellations: int = 0
    restarts: tuple[RestartRecord, ...] = ()
    submitted_at: datetime | None = None
    first_started_at: datetime | None = None
    running_since: datetime | None = None
    ended_at: datetime | None = None
    progress_at: datetime | None = None
    productive_s: float = 0.0
    lost_s: float = 0.0
    gpus: int | None = None  # as its submission asked, or its last exit held (None: never said)
    hooks: tuple[CompletionHook, ...] = ()
    last_signal: str | None = None  # the latest edge signal its logs gave (what people read)
    last_signal_at: datetime | None = None
    implicated: tuple[Implicated, ...] = ()  # nodes its restarts avoid, the latest kept
    # How fast it goes (`streams.state.pace`), this attempt's: hosts' step times, the best pace
    # its hosts went at together, what its nodes say holds them back; checkpoint times, kept
    # across attempts (the cadence is the job's).
    steps: dict[str, HostSteps] = Field(default_factory=dict)
    pace_best_s: float | None = None
    waits: Waits = Field(default_factory=Waits)  # whom its hosts wait for at collectives
    checkpoint_times: tuple[datetime, ...] = ()
    pace_told: dict[str, str] = Field(default_factory=dict)  # per node, what it was last told

    @classmethod
    def new(cls, event: Event) -> TrainingJob:
        return cls(job_id=event.subject, cluster=event.cluster)

    @property
    def key(self) -> str:
        return self.job_id

    @property
    def group_facts(self) -> Facts:
        """What job classes (rule scopes) select it by; its size is as it asked, else the nodes
        it ran on last."""
        return Facts(
            JOBS,
            self.cluster,
            partitions=(self.queue,) if self.queue else (),
            job_name=self.name,
            user=self.user,
            nodes=self.nodes_requested or len(self.nodes) or None,
        )

    @property
    def running(self) -> bool:
        return self.state is JobState.RUNNING

    @property
    def resident(self) -> bool:
        """An ended job hears little more (a late report, a restart): a job a minute would
        otherwise grow the worker's memory for as long as it runs."""
        return self.ended_at is None or self.running

    @property
    def ticks(self) -> bool:
        """Clock ticks concern running jobs only (what did not happen while they ran)."""
        return self.running

    @property
    def completion_seen(self) -> bool:
        """The current attempt logged its completion (still running, or ended so)."""
        if self.completion_attempt is not None:
            return True
        last = self.attempts[-1] if self.attempts else None
        return last is not None and last.completed and last.number >= self.attempt

    def completed(self, attempt: int) -> bool:
        """Attempt `attempt` ended after logging its completion."""
        return any(a.number == attempt and a.completed for a in self.attempts)

    @property
    def restarting(self) -> bool:
        """Requeued by Centrality (the requeue succeeded) and its next attempt not seen yet."""
        last = self.restarts[-1] if self.restarts else None
        return last is not None and last.outcome == "requeued" and last.attempt >= self.attempt

    @property
    def restarts_requested(self) -> int:
        return len(self.restarts)

    @property
    def restarts_seen(self) -> int:
        """Attempts after the first that were seen running."""
        return max(0, self.attempts_started - 1)

    @property
    def goodput(self) -> float | None:
        total = self.productive_s + self.lost_s
        return self.productive_s / total if total > 0 else None


# How fast an attempt went is of no use once it is over, and by far the largest part of a job's
# state (a few step-time summaries per host): a new attempt starts afresh anyway.
_PACE_FORGOTTEN: dict[str, object] = {
    "steps": {},
    "pace_best_s": None,
    "waits": Waits(),
    "pace_told": {},
}


def apply(state: TrainingJob | None, event: Event) -> TrainingJob:
    """Fold one event into the job; events this fold does not know leave it unchanged."""
    current = state or TrainingJob.new(event)
    return stamped(state, current, _folded(event, current), event)


def _job_nodes(nodes: tuple[str, ...]) -> tuple[str, ...]:
    return node_ids(nodes, JOB_NODES_KEPT, NODES_BYTES_KEPT)


def _forgotten(number: int, kept: tuple[int, ...], limit: int) -> bool:
    """An attempt (or restart) older than everything a full, trimmed list still holds: a
    redelivery of something folded long ago, never new."""
    return len(kept) >= limit and number < min(kept)


def _seconds(start: datetime | None, end: datetime) -> float:
    return max(0.0, (end - start).total_seconds()) if start is not None else 0.0


@singledispatch
def fold(event: Event, state: TrainingJob) -> TrainingJob:
    """What an event changes in a job. The types registered here are the ones the `jobs`
    table owns (`streams.state.entities.Kind`), decisions aside: registering one routes it."""
    return state


_folded = by_type(fold)


@fold.register
def _(event: JobSubmitted, state: TrainingJob) -> TrainingJob:
    return state.model_copy(
        update={
            "submitted_at": state.submitted_at or event.occurred_at,
            "state": state.state or JobState.PENDING,
            "hooks": event.payload.hooks or state.hooks,
            "gpus": event.payload.gpus_requested or state.gpus,
            "name": event.payload.name or state.name,
            "user": event.payload.user or state.user,
            "queue": event.payload.queue or state.queue,
            "nodes_requested": event.payload.nodes_requested or state.nodes_requested,
        }
    )


@fold.register
def _(event: JobStateChanged, state: TrainingJob) -> TrainingJob:
    p = event.payload
    if p.attempt < state.attempt or any(a.number == p.attempt for a in state.attempts):
        return state  # a late (or redelivered) report about an attempt already over
    update: dict[str, object] = {"state": p.state, "attempt": p.attempt}
    if p.nodes:
        update["nodes"] = _job_nodes(p.nodes)
    if p.state is JobState.RUNNING and p.attempt > state.attempts_started:
        t = event.occurred_at
        update |= {
            "attempts_started": p.attempt,
            "running_since": t,
            "progress_at": t,
            "first_started_at": state.first_started_at or t,
            "lost_s": state.lost_s + (_seconds(state.ended_at, t) if state.attempts else 0.0),
        } | _PACE_FORGOTTEN
    return state.model_copy(update=update)


@fold.register
def _(event: CheckpointSaved, state: TrainingJob) -> TrainingJob:
    step = state.last_checkpoint_step
    if step is not None and event.payload.step <= step:
        return state  # a late or repeated checkpoint must not move the resume point backwards
    t = event.occurred_at
    update: dict[str, object] = {
        "last_checkpoint_uri": event.payload.uri,
        "last_checkpoint_step": event.payload.step,
        "last_checkpoint_at": t,
        "checkpoint_times": tuple(sorted({*state.checkpoint_times, t}))[-CHECKPOINTS_KEPT:],
    }
    if state.progress_at is not None and t > state.progress_at:
        update |= {"productive_s": state.productive_s + _seconds(state.progress_at, t)}
        update |= {"progress_at": t}
    return state.model_copy(update=update)


@fold.register
def _(event: LogSignalDetected, state: TrainingJob) -> TrainingJob:
    signal, t = str(event.payload.signal), event.occurred_at
    newer = state.last_signal_at is None or t >= state.last_signal_at
    if newer and (state.last_signal, state.last_signal_at) != (signal, t):
        state = state.model_copy(update={"last_signal": signal, "last_signal_at": t})
    if event.payload.signal is not LogSignal.TRAINING_COMPLETE:
        return state
    # Lines come from the attempt last seen running; a line read after that attempt's exit
    # (the tailer is behind) still belongs to it, never to the next attempt.
    current = state.attempts_started or state.attempt
    ended = [a for a in state.attempts if a.number == current]
    if current and ended:
        attempts = tuple(
            a.model_copy(update={"completed": True}) if a is ended[0] else a for a in state.attempts
        )
        return state.model_copy(update={"attempts": attempts})
    return state.model_copy(update={"completion_attempt": current})


@fold.register
def _(event: JobExited, state: TrainingJob) -> TrainingJob:
    p = event.payload
    numbers = tuple(a.number for a in state.attempts)
    if p.attempt in numbers or _forgotten(p.attempt, numbers, ATTEMPTS_KEPT):
        return state  # redelivered exit of an attempt already folded
    t = event.occurred_at
    same_attempt = p.attempt == state.attempts_started
    pending = state.completion_attempt
    completed = pending is not None and pending in (0, p.attempt)
    attempt = Attempt(
        number=p.attempt,
        state=p.state,
        exit_code=p.exit_code,
        nodes=node_ids(p.nodes or state.nodes, ATTEMPT_NODES_KEPT, ATTEMPT_NODES_BYTES_KEPT),
        started_at=state.running_since if same_attempt else None,
        ended_at=t,
        completed=completed,
    )
    # A completion of an older attempt whose exit was never reported is dropped; one of a
    # later attempt (this exit is a late report) keeps waiting for its own exit.
    still_pending = pending if pending is not None and pending > p.attempt else None
    tail = _seconds(state.progress_at, t) if same_attempt else 0.0
    productive, lost = state.productive_s, state.lost_s
    if completed:
        productive += tail
    elif p.state is not JobState.CANCELLED:
        lost += tail
    return state.model_copy(
        update={
            "attempts": (*state.attempts, attempt)[-ATTEMPTS_KEPT:],
            "state": p.state if p.attempt >= state.attempt else state.state,
            "attempt": max(state.attempt, p.attempt),
            "nodes": _job_nodes(p.nodes or state.nodes)
            if p.attempt >= state.attempt
            else state.nodes,
            "failures": state.failures + is_failure(p),
            "preemptions": state.preemptions + (p.state is JobState.PREEMPTED),
            "cancellations": state.cancellations + (p.state is JobState.CANCELLED),
            "running_since": None,
            "progress_at": None,
            "ended_at": t,
            "productive_s": productive,
            "lost_s": lost,
            "gpus": p.gpus or state.gpus,
            "completion_attempt": still_pending,
        }
        | (_PACE_FORGOTTEN if p.attempt >= state.attempt else {})
    )


@fold.register
def _(event: RestartJob, state: TrainingJob) -> TrainingJob:
    numbers = tuple(r.attempt for r in state.restarts)
    if event.payload.attempt in numbers or _forgotten(
        event.payload.attempt, numbers, RESTARTS_KEPT
    ):
        return state
    record = RestartRecord(
        attempt=event.payload.attempt, at=event.occurred_at, trigger_id=event.event_id
    )
    return state.model_copy(update={"restarts": (*state.restarts, record)[-RESTARTS_KEPT:]})


@fold.register
def _(event: JobActionReported, state: TrainingJob) -> TrainingJob:
    p = event.payload
    outcome: Literal["requeued", "failed"] = "requeued" if p.succeeded else "failed"
    restarts = tuple(
        r.model_copy(update={"outcome": outcome, "error": p.error and clip(p.error)})
        if r.trigger_id == p.trigger_id and r.outcome == "requested"
        else r
        for r in state.restarts
    )
    if restarts == state.restarts:
        return state  # another trigger's, a redelivered or a late report: nothing changes
    return state.model_copy(update={"restarts": restarts})


@fold.register
def _(event: JobNodesImplicated, state: TrainingJob) -> TrainingJob:
    p = event.payload
    known = {(i.node, i.trigger_id) for i in state.implicated}
    fresh = tuple(
        Implicated(node=n, reason=clip(p.reason), at=event.occurred_at, trigger_id=p.trigger_id)
        for n in p.nodes
        if (n, p.trigger_id) not in known
    )
    if not fresh:
        return state  # told again (each of the quarantine's results tells it)
    return state.model_copy(update={"implicated": (*state.implicated, *fresh)[-IMPLICATED_KEPT:]})


@fold.register
def _(event: StepTimesObserved, state: TrainingJob) -> TrainingJob:
    if not state.running:
        return state  # a summary of an attempt over (sent at its end), or not yet begun
    steps = steps_after(state.steps, event.payload, event.occurred_at, state.pace_best_s)
    if steps is None:
        return state
    pace = pace_s(steps)
    best = state.pace_best_s
    update: dict[str, object] = {"steps": steps}
    if pace is not None and (best is None or pace < best):
        update["pace_best_s"] = pace
    return state.model_copy(update=update)


@fold.register
def _(event: CollectivesTimed, state: TrainingJob) -> TrainingJob:
    if not state.running:
        return state
    waits = waits_after(state.waits, event.payload, event.occurred_at)
    return state if waits is None else state.model_copy(update={"waits": waits})
