"""Run an async worker until SIGTERM or Ctrl-C, then let it finish its batch and stop."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from schemas.runtime.admin import require_topics
from schemas.runtime.metrics.server import serving
from schemas.runtime.settings import KafkaSettings


def run_until_signalled(
    main: Callable[[asyncio.Event], Coroutine[Any, Any, None]],
    worker: str | None = None,
    *,
    kafka: KafkaSettings | None = None,
    topics: Sequence[str] = (),
) -> None:
    """`worker` names a long-running process: it serves its metrics and health meanwhile.
    `topics`, on `kafka`, are what it reads and writes: if Kafka answers without one of them,
    it does not start (`MissingTopicsError`, said in one line with what creates them)."""

    async def runner() -> None:
        if kafka is not None:
            await require_topics(kafka, topics)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        if worker is None:
            await main(stop)
            return
        async with serving(worker):
            await main(stop)

    asyncio.run(runner())
