"""Faust's worker, logging as every other process does (`schemas.runtime.logs`).

`faust worker` sets up logging itself when it starts: the root logger's handlers cleared, its own
coloured plain-text handler put there. `on_setup_root_logger` is called right after that, so ours
replace it there: Faust's, mode's and aiokafka's records then come out as our lines do.
"""

from __future__ import annotations

import logging
import sys

import faust

from schemas.runtime.logs import configure_logging


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
