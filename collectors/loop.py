"""The polling loop every watcher and the tailer run until told to stop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

log = structlog.get_logger(__name__)


async def poll_forever(
    poll_once: Callable[[], Awaitable[Any]], poll_s: float, stop: asyncio.Event, name: str
) -> None:
    """A failed poll (scheduler or Kafka away) is logged and retried: state on disk says
    where we were, so nothing is lost meanwhile."""
    while not stop.is_set():
        try:
            await poll_once()
        except Exception as exc:
            log.warning("poll_failed", collector=name, error=str(exc))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), poll_s)
