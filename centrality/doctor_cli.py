"""`centrality doctor`: is everything Centrality needs here and as it should be, and if not, what
to do about it."""

from __future__ import annotations

import dataclasses

import orjson
import typer
from rich.console import Console
from rich.table import Table

MARK = {"ok": "[green]ok[/]", "warn": "[yellow]warn[/]", "fail": "[red]FAIL[/]", "skip": "skip"}


def doctor(json: bool = typer.Option(False, "--json", help="Print one JSON line.")) -> None:
    """Check Kafka, ClickHouse, topics, migrations, codecs, clocks and versions; say what to fix.

    Exits 1 when any check fails."""
    from centrality.doctor import run_checks

    findings = run_checks()
    if json:
        print(orjson.dumps([dataclasses.asdict(f) for f in findings]).decode())
    else:
        table = Table(title="centrality doctor")
        table.add_column("check", no_wrap=True)
        table.add_column("", no_wrap=True)
        table.add_column("finding", overflow="fold")
        table.add_column("fix", overflow="fold")
        for f in findings:
            table.add_row(f.check, MARK[f.status], f.detail, f.fix)
        Console().print(table)
    if any(f.status == "fail" for f in findings):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)
