"""`centrality shadow report`: what rules in shadow mode would have done, beside what was done."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import orjson
import typer
from rich.console import Console, Group
from rich.table import Table

from centrality.history_cli import JSON, UNTIL, _checked_time, parse_time

if TYPE_CHECKING:
    from streams.history.shadow import ShadowReport

shadow_app = typer.Typer(help="Rules in shadow mode: decided and recorded, never carried out.")


@shadow_app.command("report")
def shadow_report(
    since: str = typer.Option(
        ..., callback=_checked_time, help="Start: ISO time or an age (30m, 2h, 7d)."
    ),
    until: str = UNTIL,
    limit: int = typer.Option(20, min=0, help="How many differences to show, first first."),
    json: bool = JSON,
) -> None:
    """What the shadow rules decided, beside what was decided live, and where they differ.

    From history (ClickHouse): per rule and trigger type, what the shadow rules decided and
    what was decided live of the same types, with their outcomes; then the first differences
    (a shadow decision nothing live matched on its node or subject, or the other way round).
    Promoting a rule is a config change: {"RULE": {"mode": "live"}}."""
    from streams.history.settings import ClickHouseSettings
    from streams.history.shadow import decisions, report

    start, end = parse_time(since), parse_time(until)
    found = report(decisions(ClickHouseSettings(), start, end), start, end, limit)
    if json:
        print(orjson.dumps(dataclasses.asdict(found)).decode())
        return
    Console().print(_rendered(found))


def _rendered(r: ShadowReport) -> Any:
    span = f"{r.since:%Y-%m-%d %H:%M:%S} → {r.until:%Y-%m-%d %H:%M:%S} UTC"
    if not r.shadow_rules:
        return f"no shadow decisions from {span} (`centrality rules` shows each rule's mode)"
    tallies = Table(
        "", "rule", "type", "decisions", "targets", "outcomes", "first targets",
        title=f"shadow rules beside live ones, {span}",
    )  # fmt: skip
    for t in r.tallies:
        tallies.add_row(
            "[yellow]shadow[/]" if t.side == "shadow" else "[green]live[/]",
            t.rule,
            t.type,
            str(t.decisions),
            str(t.targets),
            ", ".join(f"{n} {o}" for o, n in t.outcomes.items()),
            ", ".join(t.first_targets),
        )
    differences = Table(
        "", "at (UTC)", "type", "target", "rule", "reason",
        title=f"{r.agreements} targets alike; first differences "
        f"({len(r.differences)} of {r.differences_total})",
    )  # fmt: skip
    for d in r.differences:
        differences.add_row(
            "[yellow]shadow only[/]" if d.side == "shadow" else "[green]live only[/]",
            d.occurred_at.strftime("%m-%d %H:%M:%S"),
            d.type,
            f"{d.cluster}/{d.target}",
            d.rule,
            d.reason[:120],
        )
    return Group(tallies, differences)


def register(app: typer.Typer) -> None:
    app.add_typer(shadow_app, name="shadow")
