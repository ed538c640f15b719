"""structlog set-up: JSON lines in services, pretty output in a terminal."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(*, json: bool | None = None, level: str = "INFO") -> None:
    use_json = not sys.stderr.isatty() if json is None else json
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer()
    )
    logging.basicConfig(format="%(message)s", stream=sys.stderr, level=level)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level)),
        # Looked up at each use, not bound once: whoever swaps sys.stderr (pytest does) is obeyed.
        logger_factory=lambda *_: structlog.PrintLogger(sys.stderr),
        # Not cached: tests that run commands in-process must still be able to capture logs.
        cache_logger_on_first_use=False,
    )
