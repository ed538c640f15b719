"""Job lifecycle bookkeeping shared by every watcher: from successive observations of a job to
JobSubmitted once, JobStateChanged per change, JobExited once per attempt, with ids that come
out the same after a restart (they derive from a per-job counter kept in the ledger)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from collectors.events import Stamp
from collectors.sink import EventSink
from collectors.watchers.ids import observation_id
from collectors.watchers.ledger import Ledger
from schemas.envelope import Event
from schemas.events import (
    JobExited,
    JobStateChanged,
    JobSubmitted,
    NodeFactsObserved,
    NodeHealthChecked,
)
from schemas.events.jobs import (
    TERMINAL_STATES,
    JobExitedPayload,
    JobState,
    JobStateChangedPayload,
    JobSubmittedPayload,
)
from schemas.events.nodes import (
    HealthStatus,
    NodeFactsObservedPayload,
    NodeHealthCheckedPayload,
)

TERMINAL = TERMINAL_STATES  # the contract's


def when(epoch_s: float | None) -> datetime:
    """Scheduler epoch seconds; unset (0) or far-future placeholders mean 'now'."""
    now = time.time()
    value = float(epoch_s or 0)
    return datetime.fromtimestamp(value if 0 < value <= now + 60 else now, UTC)


@dataclass(frozen=True)
class AttemptEnd:
    """How an earlier attempt ended, where the scheduler still tells (Kubernetes keeps a Job's
    failed pods): a failure the scheduler retried, or a disruption (a preemption)."""

    state: JobState
    raw_state: str
    exit_code: int | None = None
    reason: str | None = None
    nodes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Observation:
    """One job as a scheduler shows it now. `earlier` holds the ends of the attempts before
    this one, in order, as far as the scheduler tells; an attempt it does not tell about was
    requeued (a preemption, as Slurm's and Ray's requeues are)."""

    raw_state: str
    state: JobState
    attempt: int = 1
    nodes: tuple[str, ...] = ()
    reason: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    gpus: int = 0
    submitted_at: float | None = None
    started_at: float | None = None
    ended_at: float | None = None
    earlier: tuple[AttemptEnd, ...] = ()


def _ended_between(seen: Observation, entry: dict[str, Any], ended: int) -> JobExitedPayload:
    """How attempt `ended` ended, seen only after the next began: as the scheduler tells, else
    requeued (a preemption). Its nodes, where the scheduler does not say, are the last ones
    seen of it."""
    last_nodes = tuple(entry.get("nodes", ())) if ended == entry["attempt"] else ()
    if ended > len(seen.earlier):
        return JobExitedPayload(
            state=JobState.PREEMPTED,
            raw_state="REQUEUED",
            reason=seen.reason or "requeued",
            attempt=ended,
            nodes=last_nodes,
            requeued=True,
        )
    end = seen.earlier[ended - 1]
    return JobExitedPayload(
        state=end.state,
        raw_state=end.raw_state,
        exit_code=end.exit_code,
        reason=end.reason,
        attempt=ended,
        nodes=end.nodes or last_nodes,
        requeued=True,
    )


class JobTracker:
    def __init__(self, ledger: Ledger, stamp: Stamp) -> None:
        self.ledger = ledger
        self.stamp = stamp

    async def commit(
        self, sink: EventSink, key: str, events: list[Event], entry: dict[str, Any] | None
    ) -> list[Event]:
        """Send, then record: a crash in between resends the same ids, never loses them."""
        if events:
            await sink.emit_batch(events)
        if entry is not None:
            self.ledger.put(key, entry)
        return events

    def make(
        self, cls: type[Event], subject: str, entry: dict[str, Any], payload: Any, at: datetime
    ) -> Event:
        entry["seq"] = entry.get("seq", 0) + 1
        event_id = observation_id(
            self.stamp.cluster, entry["incarnation"], subject, entry["seq"], cls.__name__
        )
        return self.stamp.make(cls, subject, payload, at, event_id)

    def observe(
        self, job: str, seen: Observation, submitted: JobSubmittedPayload
    ) -> tuple[list[Event], dict[str, Any] | None]:
        """Events this observation adds, and the ledger entry to store once they are sent."""
        old = self.ledger.get(job)
        # A reused job id (a reset Slurm) is another job: its submit time tells them apart.
        fresh = {"raw": None, "attempt": 1, "exited": 0, "incarnation": seen.submitted_at}
        entry: dict[str, Any] = dict(old) if old else fresh
        out: list[Event] = []
        if old is None:
            out.append(self.make(JobSubmitted, job, entry, submitted, when(seen.submitted_at)))
        # Attempts that ended between two looks: how, where the scheduler says; else requeued.
        for ended in range(entry["exited"] + 1, seen.attempt):
            payload = _ended_between(seen, entry, ended)
            out.append(self.make(JobExited, job, entry, payload, when(None)))
            entry["exited"] = ended
        if seen.raw_state != entry["raw"] or seen.attempt != entry["attempt"]:
            changed = JobStateChangedPayload(
                state=seen.state,
                raw_state=seen.raw_state,
                previous_state=JobState(entry["state"]) if entry.get("state") else None,
                attempt=seen.attempt,
                nodes=seen.nodes,
                reason=seen.reason,
            )
            at = seen.started_at if seen.state == JobState.RUNNING else None
            out.append(self.make(JobStateChanged, job, entry, changed, when(at)))
        if seen.state in TERMINAL and entry["exited"] < seen.attempt:
            exited = JobExitedPayload(
                state=seen.state,
                raw_state=seen.raw_state,
                exit_code=seen.exit_code,
                signal=seen.signal,
                reason=seen.reason,
                attempt=seen.attempt,
                nodes=seen.nodes or tuple(entry.get("nodes", ())),
                gpus=seen.gpus,
            )
            out.append(self.make(JobExited, job, entry, exited, when(seen.ended_at)))
            entry["exited"] = seen.attempt
        entry.update(
            raw=seen.raw_state,
            state=seen.state.value,
            attempt=seen.attempt,
            nodes=list(seen.nodes or entry.get("nodes", ())),
        )
        return out, (entry if entry != old else None)

    def node_state(
        self,
        key: str,
        node: str,
        check: str,
        status: HealthStatus,
        message: str,
        details: dict[str, Any],
    ) -> tuple[list[Event], dict[str, Any] | None]:
        """NodeHealthChecked `check` when a node's scheduler state changes (drain, down, dead);
        `key` is the scheduler's own node identity (names may repeat, e.g. Ray's IPs)."""
        old = self.ledger.get(key)
        if old is not None and old["status"] == status.value and old["message"] == message:
            return [], None
        entry = {**(old or {"incarnation": key}), "status": status.value, "message": message}
        payload = NodeHealthCheckedPayload(
            check=check, status=status, message=message, details=details
        )
        return [self.make(NodeHealthChecked, node, entry, payload, when(None))], entry

    def node_facts(
        self, key: str, node: str, facts: NodeFactsObservedPayload, entry: dict[str, Any] | None
    ) -> tuple[list[Event], dict[str, Any] | None]:
        """NodeFactsObserved when what the scheduler says a node is (partitions, features,
        labels) changed; `entry` is the node's ledger entry as this look already changed it
        (None: unchanged), so both land in one commit."""
        base = entry if entry is not None else self.ledger.get(key)
        seen = facts.model_dump(mode="json", exclude_none=True)
        if base is not None and base.get("facts") == seen:
            return [], entry
        updated = {**(base or {"incarnation": key}), "facts": seen}
        return [self.make(NodeFactsObserved, node, updated, facts, when(None))], updated

    def unfinished(self, prefix: str, present: set[str]) -> list[str]:
        """Jobs of ours the scheduler no longer lists although we never saw them end."""
        return [
            job
            for job, entry in self.ledger.entries.items()
            if job.startswith(prefix) and job not in present and entry["exited"] < entry["attempt"]
        ]

    def forget_ended(self, prefix: str, present: set[str]) -> None:
        """Drop jobs the scheduler no longer lists and whose end was sent: keeps the ledger
        bounded (a job id that is gone for good does not come back)."""
        for job, entry in list(self.ledger.entries.items()):
            if (
                job.startswith(prefix)
                and job not in present
                and entry["exited"] >= entry["attempt"]
            ):
                self.ledger.drop(job)
