"""Faust's worker, logging as every other process does (`schemas.runtime.logs`), and closing its
loop without waiting a second for nothing.

`faust worker` sets up logging itself when it starts: the root logger's handlers cleared, its own
coloured plain-text handler put there. `on_setup_root_logger` is called right after that, so ours
replace it there: Faust's, mode's and aiokafka's records then come out as our lines do.
"""

from __future__ import annotations

import asyncio
import logging
import sys

import faust

from schemas.runtime.logs import configure_logging

# What mode's worker still runs after every service and task is done, before it closes the
# loop: callbacks the closing clients scheduled (a transport's `connection_lost`), each within
# an iteration or two of the loop.
CLOSING_S = 0.1


class Worker(faust.Worker):
    def on_setup_root_logger(self, logger: logging.Logger, level: int) -> None:
        # Not Faust's progress spinner: it sets the root logger to DEBUG, and writes terminal
        # control bytes to stdout even when stdout is a pipe. The level is CENTRALITY_LOG_LEVEL,
        # not `faust -l`.
        self.spinner = None
        logger.handlers.clear()  # Faust's, just put there
        # Right after this Faust replaces sys.stdout and sys.stderr by proxies that log what is
        # printed (`faust worker` always does): our lines go to the real stderr, not through them.
        configure_logging(stream=sys.stderr)

    async def _sentinel_task(self) -> None:
        # mode sleeps a whole second here (the canary checks it still does, so this stays an
        # override of that), and every stop of a worker waited for it: a rolling restart, a
        # rebalance's hand-over to the next worker, each test's teardown.
        await asyncio.sleep(CLOSING_S)
