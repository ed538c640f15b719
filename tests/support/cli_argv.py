"""Checks an argv against the real `centrality` command tree without running anything, for
files that name commands (compose, systemd units): a renamed command or option fails here."""

from __future__ import annotations

from typing import Any

import typer.main

from centrality.cli import app


def parse_cli(argv: list[str]) -> Any:
    """The parsed context of `centrality ARGV` (`.command.name`, `.params`); KeyError for an
    unknown command, typer.exceptions.TyperException for a wrong option or value."""
    # Typer vendors its own click, so walk groups by their `commands` rather than by class.
    command: Any = typer.main.get_command(app)
    args = list(argv)
    while hasattr(command, "commands"):
        if not args:
            raise KeyError(f"{argv} names a command group, not a command")
        if args[0] not in command.commands:
            raise KeyError(f"no command {args[0]!r} in `centrality {' '.join(argv)}`")
        command, args = command.commands[args[0]], args[1:]
    return command.make_context(command.name, args)
