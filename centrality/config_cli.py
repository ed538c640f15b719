"""`centrality config`: the effective settings, secrets masked, and where each came from."""

from __future__ import annotations

import dataclasses

import orjson
import typer
from rich.console import Console
from rich.table import Table


def config(
    json: bool = typer.Option(False, "--json", help="Print one JSON line."),
    markdown: bool = typer.Option(
        False, "--markdown", help="Print docs/settings.md: every variable, default, meaning."
    ),
) -> None:
    """The effective settings of every component (secrets masked), and where each came from.

    A setting comes from the environment, a .env file, a secrets dir, or its default."""
    from centrality.settings_report import report

    if markdown:
        from centrality.settings_docs import markdown as page

        print(page(), end="")
        return

    rows = report()
    if json:
        print(orjson.dumps([dataclasses.asdict(r) for r in rows]).decode())
        return
    table = Table(title="effective settings")
    table.add_column("variable", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("from", no_wrap=True)
    for r in rows:
        style = "" if r.source == "default" else "bold"
        table.add_row(r.variable, r.value, f"[{style}]{r.source}[/]" if style else r.source)
    Console().print(table)


def register(app: typer.Typer) -> None:
    app.command("config")(config)
