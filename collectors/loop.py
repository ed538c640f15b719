"""The polling loop every watcher and the tailer run until told to stop."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from collectors.clock import MONOTONIC, Clock
from schemas.runtime.metrics.catalog import POLLS

log = structlog.get_logger(__name__)


async def poll_forever(
    poll_once: Callable[[], Awaitable[Any]],
    poll_s: float,
    stop: asyncio.Event,
    name: str,
    clock: Clock = MONOTONIC,
) -> None:
    """A failed poll (scheduler or Kafka away) is logged and retried: state on disk says
    where we were, so nothing is lost meanwhile."""
    polled, failed = POLLS.labels(name, "ok"), POLLS.labels(name, "failed")
    while not stop.is_set():
        try:
            await poll_once()
            polled.inc()
        except Exception as exc:
            log.warning("poll_failed", collector=name, error=str(exc))
            failed.inc()
        await clock.sleep(poll_s, stop)
