"""Incidents as the streams app publishes them, for tests of what is told of them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from schemas.events.incidents import IncidentEvent, IncidentOpened, IncidentPayload

OPENED = datetime(2026, 11, 28, 22, 30, tzinfo=UTC)


def incident(
    subject: str = "inc-1",
    cls: type[IncidentEvent] = IncidentOpened,
    cluster: str = "test",
    **payload: Any,
) -> IncidentEvent:
    """143 nodes under one switch that stopped sending heartbeats; `payload` overrides."""
    fields: dict[str, Any] = {
        "title": "143 nodes under switch s12 stopped sending heartbeats within 20 s",
        "kind": "heartbeat_lost",
        "cause": "no heartbeat for 60 s (the first: gpu-001)",
        "severity": "critical",
        "domain": "switch s12",
        "opened_at": OPENED,
        "first_fault_at": OPENED - timedelta(seconds=20),
        "last_fault_at": OPENED,
        "nodes": "gpu-[001-143]",
        "nodes_count": 143,
        "states": {"unreachable": 143},
        "decided_by": ("heartbeat_lost",),
    }
    return cls(
        source="streams",
        cluster=cluster,
        subject=subject,
        occurred_at=payload.get("last_fault_at", OPENED),
        payload=IncidentPayload.model_validate(fields | payload),
    )
