"""`centrality node NAME` and `job ID`: one subject in full, its fields said as the listing
says them (the same `why`, `by`, times in ISO 8601), then its decisions, one row per action."""

from __future__ import annotations

import orjson
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from centrality import actions_view
from centrality.fleet import Kind, Status
from centrality.fleet_tables import COLUMNS, Clock
from centrality.output import console, said, table
from schemas.envelope import Event, utcnow

# What the listing's columns already say, of each kind's payload, and the columns a detail
# leaves out (it is about one subject; its count of jobs or nodes is beside their list).
_SHOWN: dict[Kind, frozenset[str]] = {
    "node": frozenset({"state", "by", "since", "why", "problem", "pending", "gpus", "gpu_model"}),
    "job": frozenset(
        {
            "state",
            "since",
            "attempt",
            "restarts_used",
            "restarts_left",
            "pending",
            "pending_since",
            "why",
            "checkpoint_step",
            "checkpoint_at",
            "last_signal",
        }
    ),
}
_LEFT_OUT = frozenset({"node", "job", "cluster", "jobs", "nodes"})


def fields(kind: Kind, status: Status) -> list[tuple[str, str]]:
    """Name and value of everything the status says, the listing's columns first; empty
    values left out."""
    clock = Clock(utcnow(), plain=True)
    found = [
        (name, value(status, clock))
        for name, value in COLUMNS[kind].items()
        if name not in _LEFT_OUT
    ]
    rest = status.payload.model_dump(exclude=set(_SHOWN[kind]))
    found += [(name, said(value)) for name, value in rest.items()]
    return [(name, text) for name, text in found if text not in ("", "-")]


def listed(status: Status, key: str) -> bytes:
    """One status as `--json` lists it: its subject, cluster and time, then its payload's
    fields, serialized by pydantic-core straight to bytes (a dict per status first made a
    10,000-node listing 0.2 s slower)."""
    head = orjson.dumps(
        {key: status.subject, "cluster": status.cluster, "at": status.occurred_at.isoformat()}
    )
    payload = status.payload.__pydantic_serializer__.to_json(status.payload)
    return head if payload == b"{}" else head[:-1] + b"," + payload[1:]


def print_json(kind: Kind, status: Status, story: list[Event], missing: str | None) -> None:
    doc = orjson.loads(listed(status, kind)) | {
        "timeline": [e.model_dump(mode="json") for e in story],
        "timeline_error": missing,
    }
    print(orjson.dumps(doc).decode())


def print_detail(kind: Kind, status: Status, story: list[Event], missing: str | None) -> None:
    out: Console = console()
    grid = Table.grid(padding=(0, 2))
    for name, text in fields(kind, status):
        grid.add_row(Text(name, style="bold"), Text(text))
    title = Text.assemble((f"{kind} {status.subject}", "bold"), f" (cluster {status.cluster})")
    out.print(Group(title, grid))
    done = actions_view.actions([e for e in story if e.topic in ("triggers", "actions")])
    if done:
        rows = [actions_view.row(a) for a in done]
        out.print(table(actions_view.COLUMNS, rows, title=f"decisions and actions ({len(done)})"))
    elif missing:
        out.print(Text.assemble(("history unavailable", "yellow"), f": {missing}"))
    out.print(
        f"[dim]more: `centrality history {kind} {status.subject}`; why a decision: "
        "`centrality replay --explain TRIGGER_ID`[/]"
    )
