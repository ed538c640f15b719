"""Waiting on the real stack in end-to-end tests: poll until something holds, fail early when a
worker of the pipeline died, and say what was seen last when it never held."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from centrality.pipeline import Pipeline


def until(
    what: str,
    check: Callable[[], Any],
    pipeline: Pipeline,
    timeout_s: float = 90,
    seen: Callable[[], Any] = lambda: None,
    poll_s: float = 0.5,
) -> Any:
    """`check()`'s first truthy answer, polled every `poll_s`."""
    deadline = time.monotonic() + timeout_s
    while not (found := check()):
        pipeline.check()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout_s:g} s; seen: {seen()}")
        time.sleep(poll_s)
    return found


async def until_true(check: Callable[[], Any], timeout_s: float = 30, poll_s: float = 0.05) -> Any:
    """In a test's event loop: `check()`'s first truthy answer, polled every `poll_s`."""
    async with asyncio.timeout(timeout_s):
        while not (found := check()):  # noqa: ASYNC110  (what it waits on changes in threads)
            await asyncio.sleep(poll_s)
    return found
