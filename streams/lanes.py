"""Two lanes in each stream queue of the streams app: what leads to decisions before telemetry.

Faust hands every fetched record of an agent's topics to one queue, in fetch order. GPU samples
come as a burst (every node's sample of one interval), so a fatal XID, a failed health check or
a job's exit fetched just after a burst waited for the whole burst to be folded: ~1 ms a message
here, seconds at a few thousand nodes. With lanes, records of the bulk topics (`gpu`) queue in
the bulk lane and every other record in the fast lane, which the agent takes from first.

Order within a partition is kept (a partition's records all go to one lane), and across topics
Kafka gives no order to keep: the folds already take a node's heartbeats, XIDs and samples in
whatever order they are fetched. Each lane has the queue's whole size and its own back-pressure,
so a full bulk lane pauses the telemetry partitions (Faust's own mechanism, per partition) and
never blocks a fast record; the queue reports full, which makes Faust's conductor hand the
record to `put`, only where a lane is full, and `put` waits only for its own lane.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from mode.utils.queues import ThrowableQueue

from streams.faust_transport import App


class LanedQueue(ThrowableQueue[Any]):
    def __init__(self, *args: Any, bulk_topics: frozenset[str], **kwargs: Any) -> None:
        self._bulk_topics = bulk_topics
        super().__init__(*args, **kwargs)

    # asyncio.Queue's storage hooks (as PriorityQueue and LifoQueue override them). `_queue`,
    # asyncio's own deque, is the bulk lane.
    def _init(self, maxsize: int) -> None:
        self._queue: deque[Any] = deque()
        self._fast: deque[Any] = deque()
        self._drops: dict[int, set[Callable[[], None]]] = {
            id(self._queue): set(),
            id(self._fast): set(),
        }

    def _put(self, item: Any) -> None:
        self._lane(item).append(item)

    def _get(self) -> Any:
        return self._fast.popleft() if self._fast else self._queue.popleft()

    def qsize(self) -> int:
        return len(self._queue) + len(self._fast)

    def empty(self) -> bool:
        return not self._queue and not self._fast and not self._errors

    def full(self) -> bool:
        return self._is_full(self._queue) or self._is_full(self._fast)

    def clear(self) -> None:
        self._fast.clear()
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
        high = on_pressure_drop not in drops and len(lane) >= self.pressure_high_size
        if high:  # the partition that fills this lane stops being fetched until it drains
            drops.add(on_pressure_drop)
            on_pressure_high()
        self.force_put_nowait(value)
        return high

    def maybe_endorse_pressure_drop(self) -> None:
        for lane in (self._fast, self._queue):
            drops = self._drops[id(lane)]
            if not drops:
                continue
            if not lane:  # drained: every paused partition of this lane fetches again
                for resume in list(drops):
                    resume()
                drops.clear()
            elif len(lane) <= self.pressure_drop_size:
                drops.pop()()

    def _lane(self, item: Any) -> deque[Any]:
        topic = getattr(getattr(item, "message", None), "topic", None)
        return self._queue if topic in self._bulk_topics else self._fast

    def _is_full(self, lane: deque[Any]) -> bool:
        return self.maxsize > 0 and len(lane) >= self.maxsize


class LanedApp(App):
    """A Faust app whose stream queues have lanes; `bulk_topics` are the telemetry topics."""

    bulk_topics: frozenset[str] = frozenset()

    def FlowControlQueue(
        self, maxsize: int | None = None, *, clear_on_resume: bool = False
    ) -> ThrowableQueue[Any]:
        return LanedQueue(
            maxsize=maxsize or 0,
            flow_control=self.flow_control,
            clear_on_resume=clear_on_resume,
            bulk_topics=self.bulk_topics,
        )
