"""The compressed period of `centrality bench goodput`: two copies of one simulated fleet, drawn
from the same seed (the same jobs, the same faults on the same nodes at the same instants), run
side by side through the same three workers. On `auto` the workers act; on `manual` every action
is refused (the allowlist enables none there), so its rules decide but only a person acts.

Simulated time runs ahead of the clock as fast as the workers keep up, and stops after each
tick that took a job down (or faulted a node) until the workers have decided and acted on it:
what they did is then applied to the simulation at the simulated instant of the failure plus the
seconds they really took (restarts after the drains decided with them). The person (on both,
for what automation left undone) answers a dead job `response_s` after it failed: runs it again,
and takes a node that failed it out for `repair_s`. A node automation kept out after a failed
benchmark is mended by a person too, after both delays.

Slow nodes fail no job, so while a fleet has one every tick is waited on: the workers' answers
(a checkpoint asked for, a quarantine that moves the job, the restart that follows) land at the
tick's instant plus what they took, as a failure's do. A slow node taken out is returned by a
person once its spell is over (its benchmark fails until then), `response_s` after it was taken
out at the soonest.
"""

from __future__ import annotations

import asyncio
import bisect
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from aiokafka import AIOKafkaConsumer

from actions.adapters.memory import write_unhealthy
from centrality.bench.hostile_watch import end_offsets, partitions, reader_at
from centrality.bench.scale_watch import LagSampler
from collectors.simulate.model import ClusterModel
from collectors.simulate.runner import group
from schemas.codec import DecodeError, decode
from schemas.envelope import Event
from schemas.events import (
    ActionSucceeded,
    JobExited,
    JobState,
    QuarantineNodes,
    RestartJob,
)
from schemas.events.actions import ActionPayload
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from streams.state.entities import JOBS

SETTLE_MAX_S = 30.0  # the longest wait for the workers to answer one tick
QUIET_S = 1.0  # caught up, and nothing new from them for this long: they have answered
WATCHED = ("triggers", "actions")


@dataclass
class Fleet:
    """One cluster's simulation, and what happened to it."""

    model: ClusterModel
    automated: bool
    job_events: list[Event] = field(default_factory=list)
    decisions: list[Event] = field(default_factory=list)  # the workers' triggers and results
    node_out_s: float = 0.0  # node-seconds out of service (drained or down)
    repairs: dict[str, float] = field(default_factory=dict)  # node → when it is mended
    failed_real: dict[str, float] = field(default_factory=dict)  # job → wall time of its exit
    quarantines: list[tuple[str, str, bool]] = field(default_factory=list)  # rule, node, right
    restarts: int = 0  # requeues by automation
    by_hand: int = 0  # requeues by a person
    moved: int = 0  # running jobs automation requeued (off a slow node)
    checkpoints_asked: int = 0  # checkpoints automation asked running jobs for

    faulty: list[tuple[float, frozenset[str]]] = field(default_factory=list)  # after each tick

    @property
    def cluster(self) -> str:
        return self.model.config.cluster

    def was_faulty(self, node: str, at: datetime) -> bool:
        """Whether `node` was faulty at `at` (simulated time), whenever that is asked."""
        at_s = (at - self.model.start).total_seconds()
        i = bisect.bisect_right(self.faulty, at_s, key=lambda tick: tick[0]) - 1
        return i >= 0 and node in self.faulty[i][1]


class Period:
    def __init__(
        self,
        kafka: KafkaSettings,
        fleets: Sequence[Fleet],
        emitter: Emitter,
        lags: LagSampler,
        truth: Path,
        *,
        response_s: float,
        repair_s: float,
    ) -> None:
        self.kafka = kafka
        self.fleets = {f.cluster: f for f in fleets}
        self.emitter = emitter
        self.lags = lags
        self.truth = truth
        self.response_s = response_s
        self.repair_s = repair_s
        self.settles = 0
        self.late = 0  # settles the workers had not answered within SETTLE_MAX_S
        self._watch: AIOKafkaConsumer | None = None
        self._told: dict[str, str] = {}
        self._restarts: dict[uuid.UUID, RestartJob] = {}  # by id, until carried out
        # Requeues of running jobs carried out before their trigger was read (the two come on
        # topics of their own): which attempt they name is the trigger's to say.
        self._unmatched: dict[uuid.UUID, tuple[Fleet, str]] = {}
        self._sent = time.monotonic()  # when the tick's events were sent
        self._requeues: list[tuple[Fleet, str, tuple[str, ...], float]] = []

    async def run(self, duration_s: float, interval_s: float, check: Callable[[], None]) -> None:
        start = await end_offsets(self.kafka, partitions(self.kafka, WATCHED))
        self._watch = await reader_at(self.kafka, start)
        try:
            t = 0.0
            while t <= duration_s:
                struck = False
                self._sent = time.monotonic()
                for fleet in self.fleets.values():
                    faults = len(fleet.model.struck)
                    events = fleet.model.tick(t)
                    fleet.faulty.append(
                        (t, frozenset(fleet.model.broken.keys() | fleet.model.slow))
                    )
                    struck |= len(fleet.model.struck) > faults or _failures(events)
                    struck |= bool(fleet.model.slow)
                    await self._emit(fleet, events)
                if struck:
                    await self._settle(check)
                    await self._requeue()
                await self._people(t)
                for fleet in self.fleets.values():
                    out = sum(
                        n.drained or n.down_until_s is not None for n in fleet.model.nodes.values()
                    )
                    fleet.node_out_s += out * interval_s
                t += interval_s
        finally:
            await self._watch.stop()

    async def _emit(self, fleet: Fleet, events: list[Event]) -> None:
        # The hardware is as it is before anyone hears of it: a benchmark the workers run on
        # what they are about to read must see the fault (or the repair) already.
        self._tell_the_benchmark()
        now = time.monotonic()
        for e in events:
            if type(e) in JOBS.owns:
                fleet.job_events.append(e)
            if isinstance(e, JobExited) and e.payload.state is not JobState.SUCCEEDED:
                fleet.failed_real[e.subject] = now
        await asyncio.gather(*(self.emitter.emit_batch(batch) for batch in group(events)))

    def _tell_the_benchmark(self) -> None:
        """The benchmark (the recording adapter's) tells the truth: the nodes faulty now."""
        unhealthy = {n: why for f in self.fleets.values() for n, why in f.model.unhealthy().items()}
        if unhealthy != self._told:
            fleet = [n for f in self.fleets.values() for n in f.model.names]
            write_unhealthy(self.truth, unhealthy, fleet)
            self._told = unhealthy

    async def _settle(self, check: Callable[[], None]) -> None:
        """Until the workers have read everything sent and said nothing new for `QUIET_S`."""
        self.settles += 1
        began, quiet_since = time.monotonic(), None
        while time.monotonic() - began < SETTLE_MAX_S:
            check()
            if await self._absorb():
                quiet_since = None
            await self.lags.sample()
            if not self.lags.drained:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= QUIET_S:
                return
        self.late += 1

    async def _absorb(self) -> bool:
        assert self._watch is not None
        fetched = await self._watch.getmany(timeout_ms=100)
        seen = False
        for records in fetched.values():
            for record in records:
                try:
                    events = decode(record.value or b"")
                except DecodeError:
                    continue
                for event in events:
                    fleet = self.fleets.get(event.cluster)
                    if fleet is not None:
                        seen = True
                        fleet.decisions.append(event)
                        await self._apply(fleet, event)
        return seen

    async def _apply(self, fleet: Fleet, event: Event) -> None:
        model = fleet.model
        if isinstance(event, QuarantineNodes) and event.payload.operator is None:
            for node in event.payload.nodes:
                right = fleet.was_faulty(node, event.occurred_at)  # when decided, not now
                fleet.quarantines.append((event.payload.rule, node, right))
            return
        if isinstance(event, RestartJob):
            self._restarts[event.event_id] = event
            if event.event_id in self._unmatched:
                self._move(*self._unmatched.pop(event.event_id), self._restarts.pop(event.event_id))
            return
        if not isinstance(event, ActionSucceeded) or event.payload.dry_run:
            return
        p = event.payload
        if p.trigger_type == "RestartJob":
            trigger = self._restarts.pop(p.trigger_id, None)
            self._restart(fleet, event.subject, p.trigger_id, trigger)
        elif p.trigger_type == "RequestCheckpoint":
            fleet.checkpoints_asked += 1
            model.checkpoint(event.subject)
        elif p.trigger_type == "QuarantineNodes":
            self._drain(fleet, p)
        elif p.trigger_type == "ReleaseNodes":
            model.resume(p.nodes)

    def _restart(
        self, fleet: Fleet, job_id: str, trigger_id: uuid.UUID, trigger: RestartJob | None
    ) -> None:
        """A requeue carried out: of a failed job, or of a running one (moved off a slow node)."""
        model = fleet.model
        if job_id in model.failed:
            took_s = time.monotonic() - fleet.failed_real.get(job_id, time.monotonic())
            avoid = trigger.payload.exclude_nodes if trigger else ()
            fleet.restarts += 1
            self._requeues.append((fleet, job_id, avoid, took_s))
        elif trigger is None:
            self._unmatched[trigger_id] = (fleet, job_id)
        else:
            self._move(fleet, job_id, trigger)

    def _move(self, fleet: Fleet, job_id: str, trigger: RestartJob) -> None:
        """The running attempt the restart named, requeued (a restart decided on an attempt
        since ended is not this one's)."""
        job = fleet.model.jobs.get(job_id)
        if job is not None and job.started_s is not None and job.attempt == trigger.payload.attempt:
            fleet.moved += 1
            took_s = time.monotonic() - self._sent
            self._requeues.append((fleet, job_id, trigger.payload.exclude_nodes, took_s))

    def _drain(self, fleet: Fleet, p: ActionPayload) -> None:
        model = fleet.model
        model.drain(p.nodes)
        for node in p.nodes:
            cause, spell = model.broken.get(node), model.slow.get(node)
            if cause is not None and cause.benchmark_sees:  # it will be kept: a person mends it
                fleet.repairs.setdefault(node, model.now_s + self.response_s + self.repair_s)
            elif spell is not None:  # kept while it throttles: a person returns it after
                fleet.repairs.setdefault(node, max(spell.until_s, model.now_s + self.response_s))

    async def _requeue(self) -> None:
        """The restarts the workers carried out, at the instant of the failure plus what they
        took. Placed after the drains decided with them (Slurm schedules a requeued job seconds
        later), as the cluster's scheduler would, so a job is not put back on the node whose
        drain was a moment behind its restart."""
        for fleet, job, avoid, took_s in self._requeues:
            model = fleet.model
            tick_s = model.now_s
            model.now_s = tick_s + min(took_s, model.config.interval_s / 2)
            await self._emit(fleet, model.requeue(job, avoid))
            model.now_s = tick_s
        self._requeues.clear()

    async def _people(self, t: float) -> None:
        """What a person does by now: mends what is due, and answers each job dead for
        `response_s` (taking out the node that failed it)."""
        for fleet in self.fleets.values():
            model = fleet.model
            for node, due in list(fleet.repairs.items()):
                if due <= t:
                    del fleet.repairs[node]
                    await self._emit(fleet, model.repair(node))
            for job_id, (job, failed_s) in list(model.failed.items()):
                if t - failed_s < self.response_s:
                    continue
                faulty = [n for n in job.nodes if n in model.broken and n not in fleet.repairs]
                why = f"a person mends it: {', '.join(model.broken[n].component for n in faulty)}"
                await self._emit(fleet, model.drain(faulty, reason=why) if faulty else [])
                for node in faulty:
                    fleet.repairs[node] = t + self.repair_s
                fleet.by_hand += 1
                await self._emit(fleet, model.requeue(job_id))


def _failures(events: list[Event]) -> bool:
    return any(
        isinstance(e, JobExited) and e.payload.state is not JobState.SUCCEEDED for e in events
    )
