"""`--version`, and help as people read it: flags shown as flags, one-line summaries, paragraphs
wrapped to the terminal, and every option saying what it is."""

from __future__ import annotations

import inspect
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


def every_command() -> list[tuple[tuple[str, ...], Any]]:
    """Each command and group under `centrality`, with its path."""
    group = typer.main.get_command(app)
    found = []
    for path in command_paths(group)[1:]:
        command: Any = group
        for name in path:
            command = command.get_command(typer.Context(command), name)
        found.append((path, command))
    return found


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


def test_every_command_is_listed_in_one_line_of_its_own_summary() -> None:
    """A group's listing shows each command's first paragraph with its line breaks as they are
    in the source (Typer's rich mode), so a summary wrapped in the source was listed broken
    mid-sentence. Each command starts with a one-line summary, as PEP 257 asks; the rest of
    its help follows a blank line, on its own `--help`."""
    long = []
    for path, command in every_command():
        summary = inspect.cleandoc(command.help or "").split("\n\n")[0]
        if not summary or "\n" in summary or len(summary) > 95:
            long.append(f"{' '.join(path)}: {summary!r}")
    assert not long, "\n".join(long)
    listing = CliRunner().invoke(app, ["bench", "--help"], terminal_width=100).output
    scale = [line for line in listing.splitlines() if "│ scale" in line]
    assert len(scale) == 1 and "Workers fed a simulated fleet in real time with faults." in scale[0]
    detail = CliRunner().invoke(app, ["bench", "scale", "--help"], terminal_width=100).output
    assert "realtime_ratio ≥ 0.95" in detail  # the rest of its help, on its own page


def test_help_reads_as_paragraphs_at_a_terminal_s_width() -> None:
    """Rich wraps each paragraph to the terminal: no line of a paragraph but its last is cut
    short by a line break of the docstring's source (`centrality.entry.reflowed`)."""
    for path in (["rules"], ["nccl"], ["bench", "incidents"]):
        page = CliRunner().invoke(app, [*path, "--help"], terminal_width=80).output
        text = page.split("Usage:")[1].split("╭")[0].splitlines()[1:]
        paragraphs = "\n".join(line.strip() for line in text).strip().split("\n\n")
        assert len(paragraphs) >= 2, (path, page)  # the summary, then the rest
        for paragraph in paragraphs:
            short = [line for line in paragraph.splitlines()[:-1] if len(line) < 60]
            assert not short, (path, short, page)


def test_every_option_and_argument_says_what_it_is() -> None:
    silent = []
    for path, command in every_command():
        silent += [
            f"{' '.join(path)} {p.name}" for p in command.params if not getattr(p, "help", "")
        ]
    assert not silent, silent
