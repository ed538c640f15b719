"""The client's incidents: the last version of each, open ones first, then the newest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from centrality.client import latest_incidents
from schemas.codec import encode
from schemas.events.incidents import IncidentOpened, IncidentResolved, IncidentUpdated

AT = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def incident(cls: Any, subject: str, opened_min: int, **more: Any) -> bytes:
    opened = AT + timedelta(minutes=opened_min)
    payload = {
        "title": f"{subject}: 3 nodes lost heartbeats",
        "kind": "heartbeat_lost",
        "cause": "heartbeats stopped",
        "domain": "rack r1",
        "opened_at": opened,
        "first_fault_at": opened,
        "last_fault_at": opened,
    } | more
    event = cls(source="streams", cluster="a", subject=subject, occurred_at=AT, payload=payload)
    return encode(event)


def test_each_incident_as_last_published_open_first() -> None:
    values = [
        incident(IncidentOpened, "inc-1", 0),
        incident(IncidentOpened, "inc-2", 5),
        incident(IncidentOpened, "inc-3", 10),
        incident(IncidentUpdated, "inc-1", 0, nodes_count=3),
        incident(IncidentResolved, "inc-3", 10, state="resolved", resolved_at=AT),
        None,  # a tombstone
        b"not an event",
    ]
    found = latest_incidents(values)
    assert [(i.subject, i.type) for i in found] == [
        ("inc-2", "IncidentOpened"),
        ("inc-1", "IncidentUpdated"),
        ("inc-3", "IncidentResolved"),
    ]
    assert found[1].payload.nodes_count == 3
