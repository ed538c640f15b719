"""Lanes in each stream queue of the streams app: what leads to decisions before telemetry.

Faust hands every fetched record of an agent's topics to one queue, in fetch order. GPU samples
come as a burst (every node's sample of one interval), so a fatal XID, a failed health check or
a job's exit fetched just after a burst waited for the whole burst to be folded: ~1 ms a message
here, seconds at a few thousand nodes. Heartbeats come as bursts too, on the topic the XIDs and
health checks travel on: at 10,000 nodes an XID waited 0.46-0.66 s behind 500-1,100 heartbeats
fetched just before it (`bench scale`, BENCHMARKS.md); an agent's passed health checks (each
re-sent every 5 minutes while it passes) would do the same. So a record queues in one of three
lanes, and the agent takes from the first lane that holds one:

1. fast: everything that is not telemetry (XIDs, health checks that did not pass, job changes,
   action results, forwards, ticks);
2. telemetry: records of the other topics that are telemetry alone (`Lanes.telemetry`: one
   heartbeat, or one health check that passed), read off the record's bytes, so nothing is
   decoded twice;
3. bulk: every record of the bulk topics (`gpu`).

Order within a partition is kept where a partition's records share a lane (the bulk topics'
always). A telemetry record is overtaken by later fast records of its partition: the folds take
a node's heartbeats, XIDs and samples in any order already (across topics Kafka gives none), and
the app is told of each such record (`Lanes.overtaken`) so a tick never judges past it
(`streams.faust.read_positions`). Each lane has its own size and back-pressure, so
a lane under pressure pauses the partitions whose records fill it (Faust's own mechanism, per
partition) and never blocks a record queued in another; the queue reports full, which makes
Faust's conductor hand the record to `put`, only where a lane is full, and `put` waits only for
its own lane. (A telemetry lane under pressure pauses `nodes` partitions, XIDs not yet fetched
included: that takes a backlog of 13,107 routine records, four fifths of the app's 16,384.)

The bulk lane is smaller (`CENTRALITY_STREAMS_BULK_LANE_RECORDS`, 2,048): a GPU sample record is
~6 KB with its eight GPUs, and a worker behind the fleet could hold 13,107 of them (~80 MB)
before its `gpu` partitions paused (a snapshot of a worker behind at 2,000 nodes: 25,669 fetched
records, 77 MB of its heap). Nothing waits behind the bulk lane, and the 819 records left
when its partitions fetch again are ~0.2 s of work: the bound saves memory, not time.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mode.utils.queues import ThrowableQueue

from schemas.events import NodeHealthChecked, NodeHeartbeat
from schemas.events.nodes import HealthStatus
from streams.faust.transport import App

FAST, TELEMETRY, BULK = range(3)  # the lanes, in the order the agent takes from them


def _never(value: bytes) -> bool:
    return False


def _ignore(message: Any) -> None:
    return None


@dataclass(frozen=True)
class Lanes:
    """Which lane a record queues in, and who hears of a record that later ones overtake."""

    bulk_topics: frozenset[str] = frozenset()
    bulk_records_max: int = 0  # the bulk lane's own size (0: the queue's, as the others)
    telemetry: Callable[[bytes], bool] = _never  # of a record's value, on the other topics
    overtaken: Callable[[Any], None] = _ignore  # given each telemetry-lane record's message

    def of(self, item: Any) -> int:
        message = getattr(item, "message", None)
        if message is None:
            return FAST
        if message.topic in self.bulk_topics:
            return BULK
        value = message.value
        return TELEMETRY if isinstance(value, bytes) and self.telemetry(value) else FAST


def one_event(**fields: str) -> Callable[[bytes], bool]:
    """Whether a record's value is one event with these string fields, read off its bytes: each
    key appears once in it, with that value. A key inside a JSON string is escaped (`\\"type\\"`)
    and never matches, and a second event or a nested object with the same key makes the key
    appear twice: so an XID, a failed check, or a batch holding one, never matches; misread, a
    record would only queue in another lane."""
    wanted = [
        (
            f'"{key}"'.encode(),
            re.compile(
                rb'"' + re.escape(key.encode()) + rb'"\s*:\s*"' + re.escape(v.encode()) + rb'"'
            ),
        )
        for key, v in fields.items()
    ]

    def check(value: bytes) -> bool:
        return all(value.count(key) == 1 and named.search(value) for key, named in wanted)

    return check


_HEARTBEAT = one_event(type=NodeHeartbeat.__name__)
_PASSED = one_event(type=NodeHealthChecked.__name__, status=HealthStatus.OK.value)


def routine(value: bytes) -> bool:
    """A record that only says all is well (one heartbeat, or one health check that passed): it
    can wait behind what may be a fault."""
    return _HEARTBEAT(value) or _PASSED(value)


class LanedQueue(ThrowableQueue[Any]):
    def __init__(self, *args: Any, lanes: Lanes, **kwargs: Any) -> None:
        self._lanes_of = lanes
        # Awaited before `get` waits on an empty queue: the agent hands over the records it
        # holds rather than keep them for one that is not there (streams.faust.batching).
        self.idle: Callable[[], Awaitable[None]] | None = None
        super().__init__(*args, **kwargs)

    # asyncio.Queue's storage hooks (as PriorityQueue and LifoQueue override them). `_queue`,
    # asyncio's own deque, is the bulk lane.
    def _init(self, maxsize: int) -> None:
        self._queue: deque[Any] = deque()
        self._lanes: tuple[deque[Any], ...] = (deque(), deque(), self._queue)
        self._drops: dict[int, set[Callable[[], None]]] = {id(lane): set() for lane in self._lanes}
        bulk = self._lanes_of.bulk_records_max
        self._sizes = {id(lane): maxsize for lane in self._lanes}
        if bulk and (not maxsize or bulk < maxsize):
            self._sizes[id(self._queue)] = bulk

    def _put(self, item: Any) -> None:
        lane = self._lanes_of.of(item)
        if lane == TELEMETRY:
            self._lanes_of.overtaken(item.message)
        self._lanes[lane].append(item)

    def _get(self) -> Any:
        for lane in self._lanes:
            if lane:
                return lane.popleft()
        raise IndexError("get from an empty queue")  # asyncio.Queue never asks then

    async def get(self) -> Any:
        if self.idle is not None and self.empty():
            await self.idle()
        return await super().get()

    def qsize(self) -> int:
        return sum(len(lane) for lane in self._lanes)

    def empty(self) -> bool:
        return not any(self._lanes) and not self._errors

    def full(self) -> bool:
        return any(self._is_full(lane) for lane in self._lanes)

    def clear(self) -> None:
        for lane in self._lanes[:-1]:
            lane.clear()
        super().clear()

    async def put(self, value: Any) -> None:
        if self._is_full(self._lane(value)):
            await super().put(value)  # waits, as any queue does, until there is room
            return
        await self._flow_control.acquire()
        self.force_put_nowait(value)

    def put_nowait_enhanced(
        self,
        value: Any,
        *,
        on_pressure_high: Callable[[], None],
        on_pressure_drop: Callable[[], None],
    ) -> bool:
        lane = self._lane(value)
        drops = self._drops[id(lane)]
        high = on_pressure_drop not in drops and len(lane) >= self._high(lane)
        if high:  # the partition that fills this lane stops being fetched until it drains
            drops.add(on_pressure_drop)
            on_pressure_high()
        self.force_put_nowait(value)
        return high

    def maybe_endorse_pressure_drop(self) -> None:
        for lane in self._lanes:
            drops = self._drops[id(lane)]
            if not drops:
                continue
            if not lane:  # drained: every paused partition of this lane fetches again
                for resume in list(drops):
                    resume()
                drops.clear()
            elif len(lane) <= self._low(lane):
                drops.pop()()

    def _lane(self, item: Any) -> deque[Any]:
        return self._lanes[self._lanes_of.of(item)]

    def _is_full(self, lane: deque[Any]) -> bool:
        size = self._sizes[id(lane)]
        return size > 0 and len(lane) >= size

    def _high(self, lane: deque[Any]) -> int:
        """mode's `pressure_high_size`, of the lane's own size."""
        return math.floor(self._sizes[id(lane)] / self.pressure_high_ratio)

    def _low(self, lane: deque[Any]) -> int:
        """mode's `pressure_drop_size`, of the lane's own size."""
        return math.floor(self._sizes[id(lane)] * self.pressure_drop_ratio)


class LanedApp(App):
    """A Faust app whose stream queues have lanes (`lanes`, set before the worker starts)."""

    lanes: Lanes = Lanes()

    def FlowControlQueue(
        self, maxsize: int | None = None, *, clear_on_resume: bool = False
    ) -> ThrowableQueue[Any]:
        return LanedQueue(
            maxsize=maxsize or 0,
            flow_control=self.flow_control,
            clear_on_resume=clear_on_resume,
            lanes=self.lanes,
        )
