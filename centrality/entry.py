"""The root command group: runs a command and turns whatever it raises into one line.

Errors are explained once, here, for every command (`centrality.errors`); a traceback is shown
only with `centrality --debug …`. Being the group's own `main`, this holds for the installed
executable and for typer's test runner alike.
"""

from __future__ import annotations

import inspect
import logging
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import structlog
import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

from centrality import service_errors, usage_errors  # noqa: F401  (they register explainers)
from centrality.errors import UNAVAILABLE, explain, one_line
from schemas.runtime.logs import CentralityHandler


class Options:
    """Root options the error handler needs after the command's context is gone."""

    debug = False
    command: str | None = None


class CentralityGroup(TyperGroup):
    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        readable_help(self)
        Options.debug, Options.command = False, None
        try:
            result = super().main(
                args, prog_name or "centrality", complete_var, standalone_mode=False, **extra
            )
            code = result if isinstance(result, int) else 0
        except typer.Abort:
            print("error: aborted", file=sys.stderr)
            code = 1
        except Exception as exc:  # every error becomes one line: that is the point
            code = _report(exc)
        if standalone_mode:
            sys.exit(code)
        return code


def _report(exc: BaseException) -> int:
    failure = explain(exc)
    if Options.debug:
        traceback.print_exception(exc)
    if failure is not None:
        print(f"error: {failure.line}", file=sys.stderr, flush=True)
        return failure.code
    if Options.command in WORKERS and not Options.debug:
        # A worker's crash is read later, in its log: keep the traceback there (as a field).
        structlog.get_logger("centrality").error(
            "worker_crashed", command=Options.command, exc_info=exc
        )
    print(
        f"error: {type(exc).__name__}: {one_line(str(exc), 200)} (unexpected: run "
        "`centrality --debug …` for the traceback, and report it)",
        file=sys.stderr,
        flush=True,
    )
    return UNAVAILABLE


# Long-running processes: what their libraries log (a lost broker, a retried request) is for the
# operator. Everything else is a command that ends in one answer or one error line.
WORKERS = frozenset({"streams", "actions", "sink", "agent", "tail", "checkpoints", "watch"})
# Libraries that log their own view of a failure we explain in one line anyway; `asyncio` too,
# which reports a client left unclosed by a failed start when the loop is gone.
CHATTY = ("aiokafka", "kafka", "clickhouse_connect", "urllib3", "asyncio")


def quiet_libraries(command: str | None) -> None:
    Options.command = command
    if Options.debug or command in WORKERS:
        return
    # On the handler, not as levels: a library imported later may set its loggers' levels
    # itself (clickhouse-connect sets urllib3's to WARNING when it is imported). Only on ours:
    # whoever else listens (pytest's capture, running commands in-process) hears everything.
    for handler in logging.getLogger().handlers:
        if isinstance(handler, CentralityHandler):
            handler.addFilter(_not_chatty)


def _not_chatty(record: logging.LogRecord) -> bool:
    chatty = any(record.name == n or record.name.startswith(f"{n}.") for n in CHATTY)
    return not chatty or record.levelno >= logging.CRITICAL


def readable_help(command: object) -> None:
    """Help as a person reads it at any terminal's width, for a command and all under it: flags
    shown as flags, and each paragraph of its help one line that rich wraps (`reflowed`)."""
    if not isinstance(command, TyperCommand | TyperGroup):
        return
    _show_flags_as_flags(command)
    command.help = reflowed(command.help)
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            readable_help(sub)


def _show_flags_as_flags(command: TyperCommand | TyperGroup) -> None:
    """Typer's help prints every option's type, `--dry-run <bool>` too, as if it took a value."""
    help_option = command.get_help_option(typer.Context(command))  # made once, then cached
    for param in [*command.params, help_option]:
        if isinstance(param, TyperOption) and param.is_flag:
            param.metavar = ""


def reflowed(text: str | None) -> str | None:
    """Each paragraph of a docstring on one line. Typer's rich help keeps the source's line
    breaks: a terminal narrower than the source showed a word or two alone on every other line,
    and a group's listing broke a command's summary where its source did."""
    if not text:
        return text
    return "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(text).split("\n\n"))
