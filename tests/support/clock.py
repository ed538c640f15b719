"""A `collectors.clock.Clock` that only moves when the test moves it.

Loops on it wait in `sleep` (tasks) or `block` (worker threads, e.g. a fake backend's
`wait_xids`). `advance` wakes them one deadline at a time and waits until everything it woke has
gone back to sleep before moving on, so what happens between two instants of the test's time is
all done, in order, however slow the machine is: tests assert exact counts and times.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Real seconds before a test that waits on the clock fails instead of hanging: only reached
# when the code under test is broken, never part of a timing.
STUCK_S = 30.0


@dataclass(order=True)
class _Sleeper:
    deadline: float
    seq: int
    wake: Callable[[], object] = field(compare=False)


class ManualClock:
    def __init__(self, start: float = 0.0) -> None:
        self.t = start
        self._lock = threading.Lock()
        self._sleepers: list[_Sleeper] = []
        self._seq = itertools.count()
        self._changed: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def now(self) -> float:
        return self.t

    @property
    def sleeping(self) -> int:
        with self._lock:
            return len(self._sleepers)

    async def sleep(self, seconds: float, stop: asyncio.Event) -> None:
        if stop.is_set():
            return
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[Any] = loop.create_future()
        sleeper = self._add(seconds, lambda: loop.call_soon_threadsafe(_resolve, woken))
        stopped: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({woken, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            self._remove(sleeper)

    def block(self, seconds: float) -> None:
        """`time.sleep` on this clock, for code that runs in a worker thread."""
        if seconds <= 0:
            return
        woken = threading.Event()
        self._add(seconds, woken.set)
        if not woken.wait(STUCK_S):
            raise TimeoutError(f"nobody moved the clock past {self.t + seconds}")

    async def settle(self, sleepers: int) -> None:
        """Return once `sleepers` waits are pending, i.e. every loop went back to sleep."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._changed = self._changed or asyncio.Event()
        deadline = loop.time() + STUCK_S
        while self.sleeping < sleepers:
            self._changed.clear()
            if self.sleeping >= sleepers:
                break
            left = deadline - loop.time()
            if left <= 0:
                raise AssertionError(f"{self.sleeping} of {sleepers} loops went back to sleep")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)

    async def advance(self, seconds: float) -> None:
        """Move time on by `seconds`, waking sleepers at their deadlines, in order."""
        target = self.t + seconds
        while True:
            with self._lock:
                due = [s for s in self._sleepers if s.deadline <= target]
                if not due:
                    self.t = target
                    return
                at = min(due).deadline
                woken = [s for s in self._sleepers if s.deadline == at]
                pending = len(self._sleepers)
                self._sleepers = [s for s in self._sleepers if s.deadline != at]
                self.t = at
            for sleeper in woken:
                sleeper.wake()
            await self.settle(pending)

    async def finish(self, task: asyncio.Task[None], step_s: float = 1.0) -> None:
        """Let `task`, told to stop, end: time moves on `step_s` at a time until it has, for
        waits that do not watch the stop event (a worker thread's)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STUCK_S
        while not task.done():
            assert loop.time() < deadline, "the task did not stop"
            with self._lock:
                self.t += step_s
                woken = [s for s in self._sleepers if s.deadline <= self.t]
                self._sleepers = [s for s in self._sleepers if s.deadline > self.t]
            for sleeper in woken:
                sleeper.wake()
            await asyncio.wait([task], timeout=0.01)
        task.result()

    def _add(self, seconds: float, wake: Callable[[], object]) -> _Sleeper:
        with self._lock:
            sleeper = _Sleeper(self.t + seconds, next(self._seq), wake)
            self._sleepers.append(sleeper)
        if self._loop is not None and self._changed is not None:
            self._loop.call_soon_threadsafe(self._changed.set)
        return sleeper

    def _remove(self, sleeper: _Sleeper) -> None:
        with self._lock:
            if sleeper in self._sleepers:
                self._sleepers.remove(sleeper)


def _resolve(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_result(None)
