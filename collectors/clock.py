"""The time collectors' loops run on: the monotonic clock here, a test's manual clock in tests.

Loops read the time and wait through a `Clock` instead of `time`/`asyncio.sleep`, so tests can
drive them step by step (tests/support/clock.py) instead of racing the wall clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on a monotonic scale; only differences mean anything."""
        ...

    async def sleep(self, seconds: float, stop: asyncio.Event) -> None:
        """Wait `seconds`, or return as soon as `stop` is set."""
        ...


class MonotonicClock:
    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float, stop: asyncio.Event) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), max(0.0, seconds))


MONOTONIC = MonotonicClock()
