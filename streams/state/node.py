"""The Node: what the stream knows about one node, folded purely from node events and from
what the brain forwards to it (job attempts seen there, its own quarantine decisions).

Quarantine state follows the brain's own decisions: a `QuarantineNodes` trigger marks its nodes
quarantined and a `ReleaseNodes` trigger clears them (both reach the node as
`QuarantineChanged`). `BenchmarkCompleted` is recorded as the last verdict; the
`benchmark_verdict` rule turns a pass into `ReleaseNodes`. So the state says what Centrality
decided, the same live and in replay, not what an action worker later managed to do.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from functools import singledispatch

from pydantic import BaseModel, ConfigDict, Field

from schemas.envelope import Event
from schemas.events import (
    BenchmarkCompleted,
    GpuSampled,
    GpuXidObserved,
    HealthStatus,
    NodeHealthChecked,
    NodeHeartbeat,
)
from streams.state.bounds import (
    CHECK_NAME_CHARS_MAX,
    GPUS_KEPT,
    HEALTH_CHECKS_KEPT,
    HEALTH_MESSAGE_CHARS_MAX,
    ID_CHARS_MAX,
    JOBS_PER_NODE_KEPT,
    XIDS_COUNTED,
    clip,
)
from streams.state.internal import NodeJobObserved, QuarantineChanged
from streams.state.stamp import Entity, stamped
from streams.state.windows import Failure, record

XIDS_KEPT = 32


class Health(BaseModel):
    model_config = ConfigDict(frozen=True)

    status: HealthStatus
    message: str = ""
    at: datetime


class GpuCounters(BaseModel):
    """Highest error counters seen per GPU (NVML's volatile counters only grow until reboot)."""

    model_config = ConfigDict(frozen=True)

    ecc_single_bit: int = 0
    ecc_double_bit: int = 0
    remapped_rows_correctable: int = 0
    remapped_rows_uncorrectable: int = 0
    retired_pages: int = 0
    ecc_double_bit_rose_at: datetime | None = None  # the sample where double-bit errors last rose


class XidSeen(BaseModel):
    model_config = ConfigDict(frozen=True)

    xid: int
    gpu: int
    at: datetime
    event_id: uuid.UUID


class Node(Entity):
    model_config = ConfigDict(frozen=True)

    node_id: str
    cluster: str
    health: dict[str, Health] = Field(default_factory=dict)
    last_heartbeat_at: datetime | None = None
    heartbeat_interval_s: float | None = None
    gpus: dict[int, GpuCounters] = Field(default_factory=dict)  # GPUs with any error seen
    xids: tuple[XidSeen, ...] = ()
    xid_counts: dict[int, int] = Field(default_factory=dict)
    quarantined: bool = False
    quarantined_at: datetime | None = None
    quarantine_reason: str | None = None
    releases: int = 0  # completed quarantine episodes: names the current one
    last_benchmark_verdict: str | None = None
    last_benchmark_at: datetime | None = None
    jobs: dict[str, int] = Field(default_factory=dict)  # job id → attempt currently running here
    failures: tuple[Failure, ...] = ()  # failed attempts that ran here, event time

    @classmethod
    def new(cls, event: Event) -> Node:
        return cls(node_id=event.subject, cluster=event.cluster)

    @property
    def key(self) -> str:
        return self.node_id

    @property
    def episode(self) -> str:
        """Names the current (or next) quarantine episode: one decision of each kind per episode."""
        return f"q{self.releases}"


def apply(state: Node | None, event: Event) -> Node:
    current = state or Node.new(event)
    return stamped(state, current, _fold(event, current), event)


@singledispatch
def _fold(event: Event, state: Node) -> Node:
    return state


@_fold.register
def _(event: NodeHeartbeat, state: Node) -> Node:
    if state.last_heartbeat_at is not None and event.occurred_at <= state.last_heartbeat_at:
        return state
    return state.model_copy(
        update={
            "last_heartbeat_at": event.occurred_at,
            "heartbeat_interval_s": event.payload.interval_s,
        }
    )


@_fold.register
def _(event: NodeHealthChecked, state: Node) -> Node:
    p = event.payload
    seen = state.health.get(p.check)
    if seen is not None and seen.at > event.occurred_at:
        return state
    check = clip(p.check, CHECK_NAME_CHARS_MAX)
    health = Health(
        status=p.status, message=clip(p.message, HEALTH_MESSAGE_CHARS_MAX), at=event.occurred_at
    )
    checks = {**state.health, check: health}
    if len(checks) > HEALTH_CHECKS_KEPT:  # the most recently reported checks
        recent = sorted(checks.items(), key=lambda kv: kv[1].at)[-HEALTH_CHECKS_KEPT:]
        checks = dict(recent)
    return state.model_copy(update={"health": checks})


def _max(seen: int, sample: int | None) -> int:
    return max(seen, sample or 0)


@_fold.register
def _(event: GpuSampled, state: Node) -> Node:
    p = event.payload
    if p.gpu not in state.gpus and len(state.gpus) >= GPUS_KEPT:
        return state  # no node has that many GPUs: the first ones seen are the real ones
    old = state.gpus.get(p.gpu, GpuCounters())
    new = GpuCounters(
        ecc_single_bit=_max(old.ecc_single_bit, p.ecc_single_bit),
        ecc_double_bit=_max(old.ecc_double_bit, p.ecc_double_bit),
        remapped_rows_correctable=_max(old.remapped_rows_correctable, p.remapped_rows_correctable),
        remapped_rows_uncorrectable=_max(
            old.remapped_rows_uncorrectable, p.remapped_rows_uncorrectable
        ),
        retired_pages=_max(old.retired_pages, p.retired_pages),
        ecc_double_bit_rose_at=event.occurred_at
        if (p.ecc_double_bit or 0) > old.ecc_double_bit
        else old.ecc_double_bit_rose_at,
    )
    if new == old:
        return state
    return state.model_copy(update={"gpus": {**state.gpus, p.gpu: new}})


@_fold.register
def _(event: GpuXidObserved, state: Node) -> Node:
    if any(x.event_id == event.event_id for x in state.xids):
        return state
    p = event.payload
    seen = XidSeen(xid=p.xid, gpu=p.gpu, at=event.occurred_at, event_id=event.event_id)
    counts = state.xid_counts
    if p.xid in counts or len(counts) < XIDS_COUNTED:  # NVIDIA's XID codes are far fewer
        counts = {**counts, p.xid: counts.get(p.xid, 0) + 1}
    return state.model_copy(update={"xids": (*state.xids, seen)[-XIDS_KEPT:], "xid_counts": counts})


@_fold.register
def _(event: BenchmarkCompleted, state: Node) -> Node:
    return state.model_copy(
        update={
            "last_benchmark_verdict": event.payload.verdict,
            "last_benchmark_at": event.occurred_at,
        }
    )


@_fold.register
def _(event: NodeJobObserved, state: Node) -> Node:
    p = event.payload
    jobs = dict(state.jobs)
    if p.running and len(p.job_id) <= ID_CHARS_MAX:
        if jobs.get(p.job_id, 0) <= p.attempt:
            jobs.pop(p.job_id, None)  # re-inserted last: the newest job is kept when trimming
            jobs[p.job_id] = p.attempt
            while len(jobs) > JOBS_PER_NODE_KEPT:
                del jobs[next(iter(jobs))]
    elif jobs.get(p.job_id, 0) <= p.attempt:
        jobs.pop(p.job_id, None)
    failures = state.failures
    if p.failure:
        failure = Failure(at=event.occurred_at, job_id=p.job_id, attempt=p.attempt, cause=p.cause)
        failures = record(failures, failure)
    return state.model_copy(update={"jobs": jobs, "failures": failures})


@_fold.register
def _(event: QuarantineChanged, state: Node) -> Node:
    p = event.payload
    if p.quarantined == state.quarantined:
        return state
    if p.quarantined:
        update: dict[str, object] = {
            "quarantined": True,
            "quarantined_at": event.occurred_at,
            "quarantine_reason": clip(p.reason),
        }
    else:
        update = {
            "quarantined": False,
            "quarantined_at": None,
            "quarantine_reason": None,
            "releases": state.releases + 1,
        }
    return state.model_copy(update=update)
