"""`centrality incidents`, `incident ID`: what shares a cause, as the streams app publishes it."""

from __future__ import annotations

import asyncio
import sys
from datetime import datetime
from typing import Annotated, Literal

import orjson
import typer
from rich.console import Console, Group
from rich.table import Table

from centrality.errors import UserError
from centrality.fleet_cli import CLUSTER, JSON, _age, _state, node_table
from schemas.envelope import utcnow
from schemas.events.incidents import IncidentEvent
from schemas.fleet import read_fleet, read_incidents
from schemas.settings import KafkaSettings

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
            _state(p.state),
            _age(p.opened_at, now),
            str(p.nodes_count),
            p.title,
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
    Console().print(incident_table(found, utcnow()))


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
    members = sorted(
        (s for s in fleet.nodes.values() if s.payload.incident == incident_id),
        key=lambda s: s.subject,
    )
    if json:
        doc = _document(found) | {"nodes_now": [s.subject for s in members]}
        sys.stdout.buffer.write(orjson.dumps(doc) + b"\n")
        return
    now = utcnow()
    fields = Table.grid(padding=(0, 2))
    for name, value in found.payload.model_dump(exclude_none=True, exclude={"title"}).items():
        if value not in ((), {}, ""):
            shown = counts(value) if name == "states" else value
            fields.add_row(f"[bold]{name}[/]", _words(shown))
    console = Console()
    console.print(Group(f"[bold]{found.payload.title}[/] ({incident_id})", fields))
    if members:
        console.print(node_table(members, now))
    console.print("[dim]a node's story: `centrality node NAME`[/]")


def _words(value: object) -> str:
    """A field as people read it: times with their zone, lists as lists."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple | list):
        return ", ".join(str(v) for v in value)
    return str(value)
