"""Run an async worker until SIGTERM or Ctrl-C, then let it finish its batch and stop."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Coroutine
from typing import Any

from schemas.metrics.server import serving


def run_until_signalled(
    main: Callable[[asyncio.Event], Coroutine[Any, Any, None]], worker: str | None = None
) -> None:
    """`worker` names a long-running process: it serves its metrics and health meanwhile."""

    async def runner() -> None:
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
