"""`--version`, and help that shows a boolean flag as a flag."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from centrality.cli import app

CLI = str(Path(sys.executable).with_name("centrality"))
ROOT = Path(__file__).resolve().parents[3]


def command_paths(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command, asked the way click asks a group (so lazily loaded ones count too)."""
    if not hasattr(command, "list_commands"):
        return [path]
    ctx = typer.Context(command)
    subs = {name: command.get_command(ctx, name) for name in command.list_commands(ctx)}
    return [path] + [p for name, sub in subs.items() for p in command_paths(sub, (*path, name))]


def test_no_help_shows_a_flag_as_taking_a_value() -> None:
    paths = command_paths(typer.main.get_command(app))
    assert ("agent",) in paths and ("watch", "slurm") in paths and ("bench", "hostile") in paths
    runner = CliRunner()
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], terminal_width=200)
        assert result.exit_code == 0, (path, result.output)
        assert "<bool>" not in result.output, (path, result.output)
    agent = runner.invoke(app, ["agent", "--help"], terminal_width=200).output
    dry_run = next(line for line in agent.splitlines() if "--dry-run" in line)
    assert "Count events instead" in dry_run and "<" not in dry_run
    fake_gpus = next(line for line in agent.splitlines() if "--fake-gpus" in line)
    assert "<int>" in fake_gpus  # options that take a value still say what
