"""`centrality incidents`, `incident ID`: what shares a cause, as the streams app publishes it."""

from __future__ import annotations

import asyncio
import sys
from datetime import datetime
from typing import Annotated, Literal

import orjson
import typer
from rich.console import Group
from rich.table import Table
from rich.text import Text

from centrality import fleet_tables
from centrality.errors import UserError
from centrality.fleet import selected
from centrality.fleet_cli import CLUSTER, JSON
from centrality.output import age, console, said
from schemas.envelope import utcnow
from schemas.events.incidents import IncidentEvent
from schemas.runtime.fleet import read_fleet, read_incidents
from schemas.runtime.settings import KafkaSettings

STATE = typer.Option(None, "--state", help="Only open or only resolved incidents.")


def register(app: typer.Typer) -> None:
    app.command("incidents")(incidents)
    app.command("incident")(incident)


def counts(states: dict[str, int]) -> str:
    """Members by state, most first: `300 quarantined, 75 suspect`."""
    return ", ".join(f"{n} {state}" for state, n in sorted(states.items(), key=lambda kv: -kv[1]))


def incident_table(found: list[IncidentEvent], now: datetime) -> Table:
    table = Table("incident", "cluster", "state", "opened", "nodes", "title", "now")
    for i in found:
        p = i.payload
        table.add_row(
            i.subject,
            i.cluster,
            Text(p.state, style="red" if p.state == "open" else "green"),
            age(p.opened_at, now),
            str(p.nodes_count),
            Text(p.title),
            counts(p.states),
        )
    table.caption = f"{len(found)} incidents, {sum(i.payload.state == 'open' for i in found)} open"
    return table


def _document(i: IncidentEvent) -> dict[str, object]:
    head = {"incident": i.subject, "cluster": i.cluster, "at": i.occurred_at.isoformat()}
    return head | i.payload.model_dump(mode="json")


def incidents(
    cluster: str | None = CLUSTER,
    state: Literal["open", "resolved"] | None = STATE,
    json: bool = JSON,
) -> None:
    """Incidents, newest first: nodes whose faults share a cause, each told to people once."""
    found = sorted(
        (
            i
            for i in asyncio.run(read_incidents(KafkaSettings())).incidents.values()
            if cluster in (None, i.cluster) and state in (None, i.payload.state)
        ),
        key=lambda i: i.payload.opened_at,
        reverse=True,
    )
    if json:
        sys.stdout.buffer.write(orjson.dumps([_document(i) for i in found]) + b"\n")
        return
    console().print(incident_table(found, utcnow()))


def incident(
    incident_id: Annotated[str, typer.Argument(help="The incident's id (inc-…).")],
    json: bool = JSON,
) -> None:
    """One incident in full, and its nodes still in it as the streams app sees them now."""
    kafka = KafkaSettings()
    known = asyncio.run(read_incidents(kafka)).incidents
    found = known.get(incident_id)
    if found is None:
        raise UserError(
            f"no incident {incident_id!r}", f"`centrality incidents` lists the {len(known)} known"
        )
    fleet = asyncio.run(read_fleet(kafka))
    members = selected(s for s in fleet.nodes.values() if s.payload.incident == incident_id)
    if json:
        doc = _document(found) | {"nodes_now": [s.subject for s in members]}
        sys.stdout.buffer.write(orjson.dumps(doc) + b"\n")
        return
    now = utcnow()
    fields = Table.grid(padding=(0, 2))
    for name, value in found.payload.model_dump(exclude_none=True, exclude={"title"}).items():
        if value not in ((), {}, ""):
            shown = counts(value) if name == "states" else value
            fields.add_row(Text(name, style="bold"), Text(said(shown)))
    out = console()
    out.print(Group(Text.assemble((found.payload.title, "bold"), f" ({incident_id})"), fields))
    if members:
        out.print(fleet_tables.table("node", members, now))
    out.print("[dim]a node's story: `centrality node NAME`[/]")
