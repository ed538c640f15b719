"""A worker's unexpected crash keeps its traceback in the log; a one-shot command's does not."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from centrality.entry import CentralityGroup, quiet_libraries
from schemas.runtime.logs import configure_logging

app = typer.Typer(cls=CentralityGroup)


@app.callback()
def _root(ctx: typer.Context) -> None:
    configure_logging()
    quiet_libraries(ctx.invoked_subcommand)


@app.command("sink")  # named as the history sink worker is
def _worker() -> None:
    raise KeyError("the table vanished")


@app.command("lag")
def _one_shot() -> None:
    raise KeyError("the table vanished")


def test_a_worker_crash_is_logged_with_its_exception_then_one_line() -> None:
    result = CliRunner().invoke(app, ["sink"])
    assert result.exit_code == 1
    *logged, line = result.stderr.strip().splitlines()
    assert "worker_crashed" in "\n".join(logged) and "the table vanished" in "\n".join(logged)
    assert line.startswith("error: KeyError: 'the table vanished' (unexpected: run")


def test_a_one_shot_command_crash_is_one_line() -> None:
    result = CliRunner().invoke(app, ["lag"])
    assert result.exit_code == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: KeyError: 'the table vanished'") and "--debug" in line
