"""Drives the model in real or accelerated time and sends its events through a sink.

Each tick's events are grouped per (topic, subject) into one message each, in order; the
groups of a tick are independent (different keys), so they are sent concurrently.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from collectors.simulate.config import SimConfig
from collectors.simulate.model import ClusterModel
from collectors.sink import EventSink
from schemas.envelope import Event, utcnow

MAX_IN_FLIGHT = 512
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


async def simulate(
    config: SimConfig,
    sink: EventSink,
    *,
    duration_s: float,
    speed: float = 0.0,
    start: datetime | None = None,
    stop: asyncio.Event | None = None,
    on_tick: Callable[[float], None] | None = None,
) -> SimStats:
    """Simulate `duration_s` of cluster time; `speed` 1 is real time, 60 a minute per second,
    0 as fast as the sink takes it. `on_tick` hears the simulated seconds done (progress)."""
    first = start or utcnow()
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
            model.start = first + timedelta(seconds=max(0.0, behind_s) * speed)
        events = model.tick(t)
        batches = group(events)
        await asyncio.gather(*(send(b) for b in batches))
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
            delay = began + t / speed - time.perf_counter()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for((stop or asyncio.Event()).wait(), delay)
    stats.wall_s = time.perf_counter() - began
    return stats
