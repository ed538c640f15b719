"""Triggers under way: at most `limit` at once, one subject's in arrival order, and which offsets
can be committed (every record before them finished too).

Work that waits on something outside the worker for long (a drain waiting for its batch,
`actions.batches`) parks: it stops counting against `limit` and is not waited for when its
partitions are handed over, so waiting work never starves the rest."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Collection, Coroutine, Iterator
from typing import Any

from aiokafka import TopicPartition

Work = Coroutine[Any, Any, None]


class Inflight:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._tails: dict[str, asyncio.Task[None]] = {}
        self._offsets: dict[TopicPartition, deque[tuple[int, asyncio.Task[None]]]] = {}
        self._running: set[asyncio.Task[None]] = set()
        self._parked: set[asyncio.Task[None]] = set()
        self._subjects: dict[asyncio.Task[None], str] = {}
        self._changed = asyncio.Event()

    def __len__(self) -> int:
        return len(self._running)

    @property
    def room(self) -> int:
        return max(0, self.limit - len(self._running - self._parked))

    @contextlib.contextmanager
    def parked(self) -> Iterator[Callable[[], bool]]:
        """Park the current work while in it; it gives whether work of the same subject was
        started since, and waits behind it."""
        task = asyncio.current_task()
        assert task in self._running, "only work this Inflight runs can park"
        subject = self._subjects.get(task)
        self._parked.add(task)
        self._changed.set()
        try:
            yield lambda: subject is not None and self._tails.get(subject) is not task
        finally:
            self._parked.discard(task)

    def start(self, tp: TopicPartition, offset: int, subject: str | None, work: Work) -> None:
        """Run `work` for the record at `offset`, after the subject's earlier work."""
        before = self._tails.get(subject) if subject is not None else None
        task = asyncio.create_task(_after(before, work))
        if subject is not None:
            self._tails[subject] = task
            self._subjects[task] = subject
        self._running.add(task)
        task.add_done_callback(lambda t: self._finished(subject, t))
        self._offsets.setdefault(tp, deque()).append((offset, task))

    def _finished(self, subject: str | None, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        self._parked.discard(task)
        self._subjects.pop(task, None)
        if subject is not None and self._tails.get(subject) is task:
            del self._tails[subject]
        self._changed.set()

    def committable(
        self, partitions: Collection[TopicPartition] | None = None
    ) -> dict[TopicPartition, int]:
        """Per partition, one past the last record finished with every earlier one; each offset
        is given once. Work that was abandoned (cancelled) is not finished."""
        out: dict[TopicPartition, int] = {}
        for tp, queue in self._offsets.items():
            if partitions is not None and tp not in partitions:
                continue
            last = None
            while queue and queue[0][1].done() and not queue[0][1].cancelled():
                last = queue.popleft()[0]
            if last is not None:
                out[tp] = last + 1
        return out

    async def wait_for_room(self, timeout_s: float) -> None:
        if self.room:
            return
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout_s)

    async def settle(
        self, timeout_s: float, partitions: Collection[TopicPartition] | None = None
    ) -> None:
        """Wait up to `timeout_s` for the work of these partitions to finish (parked work is
        not waited for)."""
        tasks = [t for _, t in self._entries(partitions) if not t.done() and t not in self._parked]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s)

    async def abandon(self, partitions: Collection[TopicPartition] | None = None) -> None:
        """Cancel what is still running there and forget those partitions: their records are
        delivered again, and the ledger tells the next worker what had started."""
        tasks = [t for _, t in self._entries(partitions) if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        for tp in list(self._offsets):
            if partitions is None or tp in partitions:
                del self._offsets[tp]

    def _entries(
        self, partitions: Collection[TopicPartition] | None
    ) -> list[tuple[int, asyncio.Task[None]]]:
        return [
            entry
            for tp, queue in self._offsets.items()
            if partitions is None or tp in partitions
            for entry in queue
        ]


async def _after(before: asyncio.Task[None] | None, work: Work) -> None:
    try:
        if before is not None:
            await asyncio.wait([before])
    except BaseException:  # abandoned before its turn: the work never starts
        work.close()
        raise
    await work
