"""Logging for every process: structlog lines, and the standard library's records made alike.

One line per record on stderr: a JSON object (`timestamp`, `level`, `logger`, `event`, the
fields; an exception's traceback as text in `exception`) unless stderr is a terminal, where it is
rendered for reading. Records of libraries that use `logging` (Faust, mode, aiokafka, asyncio,
`warnings`) go through the same processors, so a process never mixes formats. While a service a
worker needs is away, its client libraries' warnings and errors are counted, not printed
(`schemas.runtime.outages`).

structlog's own lines are rendered and written directly, without a `logging.LogRecord`: the
streams worker logs per decision, and that path stays as cheap as it can be.
"""

from __future__ import annotations

import json as std_json
import logging
import sys
from collections.abc import Callable
from typing import Any, Literal, TextIO

import orjson
import structlog
from pydantic import Field, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from structlog.typing import EventDict, Processor, WrappedLogger

from schemas.runtime.outages import unless_held_back

Level = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


class LogSettings(BaseSettings):
    """`CENTRALITY_LOG_*`: how much every process logs, and how."""

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_LOG_", extra="ignore")

    level: Level = Field(default="INFO", description="Lines below this level are dropped.")
    format: Literal["auto", "json", "console"] = Field(
        default="auto", description="`auto`: JSON unless stderr is a terminal."
    )

    @field_validator("level", "format", mode="before")
    @classmethod
    def _any_case(cls, value: Any, info: ValidationInfo) -> Any:
        if not isinstance(value, str):
            return value
        value = value.strip()
        return value.upper() if info.field_name == "level" else value.lower()

    def renders_json(self, stream: TextIO) -> bool:
        """JSON unless asked otherwise, or `auto` and a person is watching `stream`."""
        if self.format == "auto":
            return not stream.isatty()
        return self.format == "json"


class _Writer(structlog.WriteLogger):
    """One `write` per line, named so that `logger` says which part of the system spoke."""

    def __init__(self, stream: TextIO, name: str) -> None:
        super().__init__(stream)
        self.name = name


class CentralityHandler(logging.Handler):
    """The standard library's records, onto the same stream as structlog's (the one handler
    Centrality adds to the root logger)."""

    def __init__(self, level: int, stream: TextIO | None) -> None:
        super().__init__(level)
        self._stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
            stream = self._stream or sys.stderr
            stream.write(line + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


def _dumps(event_dict: EventDict, default: Callable[[Any], Any]) -> str:
    try:
        return orjson.dumps(event_dict, default=default, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        pass
    # orjson refuses what hostile input can put in a field (integers past 64 bits, lone
    # surrogates, which become "?" so that every JSON parser reads the line). A log call must
    # never raise, whatever a field holds (keys of other types, cycles): the last resort is
    # each value's repr.
    try:
        text = std_json.dumps(event_dict, default=default, ensure_ascii=False)
    except (TypeError, ValueError):
        text = std_json.dumps(
            {str(k): v if isinstance(v, str) else repr(v) for k, v in event_dict.items()},
            ensure_ascii=False,
        )
    return text.encode("utf-8", "replace").decode()


def _logger_name(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
    record = event_dict.get("_record")
    event_dict["logger"] = record.name if record is not None else getattr(logger, "name", "")
    return event_dict


def _shared() -> list[Processor]:
    """What every record gets, ours and the standard library's."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]


def _render(as_json: bool, colors: bool) -> list[Processor]:
    """From a full event dict to the line."""
    if as_json:
        return [structlog.processors.format_exc_info, structlog.processors.JSONRenderer(_dumps)]
    return [
        structlog.dev.ConsoleRenderer(
            colors=colors,
            # Locals can hold secrets (a signing key, a token): never print them.
            exception_formatter=(
                structlog.dev.RichTracebackFormatter(show_locals=False)
                if colors
                else structlog.dev.plain_traceback
            ),
        )
    ]


def configure_logging(
    *, json: bool | None = None, level: str | None = None, stream: TextIO | None = None
) -> None:
    """Configure structlog and the standard library's root logger for this process.

    `json` and `level` are a command's own defaults (the demo is quieter than a worker);
    `CENTRALITY_LOG_FORMAT` and `CENTRALITY_LOG_LEVEL` win over them when set. Lines go to
    `stream`, or to whatever `sys.stderr` is at each line (whoever swaps it, as pytest does, is
    obeyed). Calling it again replaces what it set before, and leaves other handlers alone.
    """
    defaults: dict[str, str] = {}
    if json is not None:
        defaults["format"] = "json" if json else "console"
    if level is not None:
        defaults["level"] = level
    settings = LogSettings()
    settings = LogSettings(**{**defaults, **settings.model_dump(include=settings.model_fields_set)})
    target = stream or sys.stderr
    as_json, colors = settings.renders_json(target), target.isatty()
    number = logging.getLevelNamesMapping()[settings.level]

    structlog.configure(
        processors=[*_shared(), *_render(as_json, colors)],
        wrapper_class=structlog.make_filtering_bound_logger(number),
        logger_factory=lambda *args: _Writer(stream or sys.stderr, str(args[0]) if args else ""),
        # Not cached: tests that run commands in-process must still be able to capture logs.
        cache_logger_on_first_use=False,
    )

    handler = CentralityHandler(number, stream)
    # A client library's retries while Kafka or ClickHouse is away: counted, not printed.
    handler.addFilter(unless_held_back)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=_shared(),
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *_render(as_json, colors),
            ],
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, CentralityHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(number)
    # aiokafka logs at debug level on every send and fetch; building those records costs ~7% of
    # a busy worker even when nothing prints them.
    logging.getLogger("aiokafka").setLevel(max(number, logging.INFO))
    # Off first: capturing again is a no-op once logging thinks it captures, even where
    # `warnings.showwarning` was put back since (every `warnings.catch_warnings` exit does).
    logging.captureWarnings(False)
    logging.captureWarnings(True)
