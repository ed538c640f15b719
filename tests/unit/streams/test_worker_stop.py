"""The streams worker closes its loop soon after its services and tasks are done, not after
mode's second of waiting (streams/faust/worker.py)."""

from __future__ import annotations

import time

from mode.worker import Worker as ModeWorker

from streams.faust.worker import CLOSING_S, Worker


async def test_the_loop_is_closed_without_mode_s_second() -> None:
    worker = object.__new__(Worker)  # the wait uses nothing of the worker
    started = time.monotonic()
    await worker._sentinel_task()
    waited_s = time.monotonic() - started
    assert CLOSING_S <= waited_s < 0.5
    started = time.monotonic()
    await ModeWorker._sentinel_task(worker)  # what it overrides, as the canary checks
    assert time.monotonic() - started >= 1.0
