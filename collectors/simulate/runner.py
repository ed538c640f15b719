"""Drives the model in real or accelerated time and sends its events through a sink.

Each tick's events are grouped per (topic, subject) into one message each, in order; the
groups of a tick are independent (different keys), so they are sent concurrently.

A paced run may spread a tick's routine telemetry across its interval (`slices`): each node's
agent samples on its own clock, so a real fleet's samples never arrive all at once, and a
simulator that sends 80,000 GPU samples in the same instant measures its own burst. Each
subject keeps its slice from tick to tick; anything not routine (a fault, a state change, a
job's events) leaves with the tick, as before.

No event is stamped in the future: the workers stamp what they do with the wall clock, and an
event from ahead of it would sort after what was done about it (a drain before its XID). Unpaced
or faster than real time, the simulated period ends when the run does (`period_start`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from collectors.simulate.config import SimConfig
from collectors.simulate.faulted import FaultSummary, summary
from collectors.simulate.model import ClusterModel
from collectors.sink import EventSink
from schemas.envelope import Event, utcnow

MAX_IN_FLIGHT = 512
# What an agent sends every interval whatever happens: spread by `slices`.
ROUTINE = frozenset({"GpuSampled", "NodeHeartbeat"})
# Below this share of real time a paced run reports that it fell behind.
KEPT_UP = 0.95


@dataclass
class SimStats:
    ticks: int = 0
    events: int = 0
    messages: int = 0
    wall_s: float = 0.0
    by_type: dict[str, int] = field(default_factory=dict)
    # Paced runs only (speed > 0): the wall time the schedule gave the ticks sent, and how late
    # a tick started at worst. A simulator that falls behind measures itself, not the
    # pipeline it feeds, so it must say so.
    scheduled_s: float = 0.0
    behind_s_max: float = 0.0
    # The simulated period as stamped (its first tick and its last), and what it faulted.
    first_at: datetime | None = None
    last_at: datetime | None = None
    faulted: list[FaultSummary] = field(default_factory=list)

    @property
    def events_per_s(self) -> float:
        return self.events / self.wall_s if self.wall_s else 0.0

    @property
    def realtime_ratio(self) -> float | None:
        """Wall time asked for over wall time taken (1.0: on schedule); None when unpaced."""
        if not self.scheduled_s or not self.wall_s:
            return None
        return min(1.0, self.scheduled_s / self.wall_s)

    @property
    def fell_behind(self) -> bool:
        ratio = self.realtime_ratio
        return ratio is not None and ratio < KEPT_UP


def group(events: list[Event]) -> list[list[Event]]:
    groups: dict[tuple[str, str], list[Event]] = {}
    for e in events:
        groups.setdefault((e.topic, e.subject), []).append(e)
    return list(groups.values())


def sliced(batches: list[list[Event]], slices: int) -> list[list[list[Event]]]:
    """The tick's messages in `slices` parts, sent one after the other across the interval."""
    parts: list[list[list[Event]]] = [[] for _ in range(slices)]
    for batch in batches:
        routine = slices > 1 and all(e.type in ROUTINE for e in batch)
        at = zlib.crc32(batch[0].subject.encode()) % slices if routine else 0
        parts[at].append(batch)
    return parts


def period_start(now: datetime, duration_s: float, speed: float) -> datetime:
    """Where simulated time begins, so that no tick is stamped after the wall clock: unpaced
    (`speed` 0) the period ends now, as though it had just been lived; faster than real time it
    ends when the run does; at real time or slower it begins now."""
    ahead_s = duration_s if speed <= 0 else max(0.0, duration_s - duration_s / speed)
    return now - timedelta(seconds=ahead_s)


async def pause(stop: asyncio.Event | None, delay_s: float) -> None:
    """Waits `delay_s`, or less if `stop` is set meanwhile."""
    if delay_s > 0:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for((stop or asyncio.Event()).wait(), delay_s)


async def simulate(
    config: SimConfig,
    sink: EventSink,
    *,
    duration_s: float,
    speed: float = 0.0,
    start: datetime | None = None,
    stop: asyncio.Event | None = None,
    on_tick: Callable[[float], None] | None = None,
    slices: int = 1,
) -> SimStats:
    """Simulate `duration_s` of cluster time; `speed` 1 is real time, 60 a minute per second,
    0 as fast as the sink takes it. `on_tick` hears the simulated seconds done (progress).
    `slices`: paced, a tick's routine telemetry leaves in this many parts across the interval.
    `start`: the first tick's instant (default: `period_start`'s)."""
    first = start or period_start(utcnow(), duration_s, speed)
    model = ClusterModel(config, first)
    stats = SimStats()
    began = time.perf_counter()
    slots = asyncio.Semaphore(MAX_IN_FLIGHT)

    async def send(batch: list[Event]) -> None:
        async with slots:
            await sink.emit_batch(batch)

    t = 0.0
    while t <= duration_s and not (stop and stop.is_set()):
        if speed > 0:
            behind_s = time.perf_counter() - began - t / speed
            stats.behind_s_max = max(stats.behind_s_max, behind_s)
            # A late tick is stamped when it is sent, as an agent that samples late stamps its
            # samples: stamped on schedule, a simulator minutes behind sends heartbeats minutes
            # old, and the pipeline rightly calls its whole fleet lost.
            late = first + timedelta(seconds=max(0.0, behind_s) * speed)
            model.start = min(late, utcnow() - timedelta(seconds=t))  # never ahead of the clock
        events = model.tick(t)
        stats.first_at = stats.first_at or model.at
        stats.last_at = model.at
        batches = group(events)
        parts = sliced(batches, slices if speed > 0 else 1)
        for k, part in enumerate(parts):
            if k:  # on the schedule: a late tick catches up
                at_s = (t + k * config.interval_s / len(parts)) / speed
                await pause(stop, began + at_s - time.perf_counter())
            await asyncio.gather(*(send(b) for b in part))
        stats.ticks += 1
        stats.events += len(events)
        stats.messages += len(batches)
        for e in events:
            stats.by_type[e.type] = stats.by_type.get(e.type, 0) + 1
        if on_tick is not None:
            on_tick(min(t, duration_s))
        t += config.interval_s
        if speed > 0:
            stats.scheduled_s = t / speed  # the ticks sent cover [0, t) of cluster time
            await pause(stop, began + t / speed - time.perf_counter())
    stats.wall_s = time.perf_counter() - began
    stats.faulted = summary(model.faulted)
    return stats
