"""What people read of an incident (`IncidentPayload`), made from the incident's state: the title
says how many nodes, what they share, where and within what time, in words."""

from __future__ import annotations

from collections import Counter

from schemas.events.incidents import (
    IncidentEvent,
    IncidentOpened,
    IncidentPayload,
    IncidentResolved,
    IncidentUpdated,
)
from schemas.hostnames import collect
from schemas.limits import TEXT
from schemas.xids import describe
from streams.state.bounds import clip
from streams.state.incidents import DOMAINS, MIXED, Incident

_PLACE = {"switch": "under switch", "job": "of job", "partition": "in partition"}


def domain(incident: Incident) -> tuple[str, str]:
    """The narrowest failure domain every member shares: its name and how a title says it."""
    if len(incident.members) == 1:
        node = next(iter(incident.members))
        return f"node {node}", node
    for name in DOMAINS:
        value = incident.domains.get(name)
        if value and value != MIXED:
            return f"{name} {value}", f"{_PLACE[name]} {value}"
    return f"cluster {incident.cluster}", f"in cluster {incident.cluster}"


def what(fault: str) -> str:
    """What the members did, as a title says it of many."""
    kind, _, detail = fault.partition(":")
    if fault == "heartbeat_lost":
        return "stopped sending heartbeats"
    if kind == "xid" and detail.isdigit():
        return f"hit {describe(int(detail))}"
    if kind == "health":
        return f"failed health check {detail}"
    if kind == "operator":
        return f"were taken out by operator {detail}"
    return f"were taken out by rule {fault}"


def title(incident: Incident) -> str:
    count = len(incident.members) + incident.uncounted
    _, where = domain(incident)
    if count == 1:
        return clip(f"{where}: {incident.cause}", TEXT)
    first, last = incident.first_fault_at, incident.last_fault_at
    span_s = (last - first).total_seconds() if first and last else 0.0
    within = f" within {span_s:.0f} s" if span_s >= 1 else " at once"
    return clip(f"{count} nodes {where} {what(incident.fault)}{within}", TEXT)


def folded(nodes: list[str]) -> str:
    """The members as a hostlist, cut with `…` where it would not fit."""
    text = collect(nodes)
    return text if len(text) <= TEXT else text[: TEXT - 1] + "…"


def incident_view(incident: Incident) -> IncidentPayload:
    assert incident.opened_at and incident.first_fault_at and incident.last_fault_at
    return IncidentPayload(
        title=title(incident),
        kind=incident.fault,
        cause=incident.cause,
        severity=incident.severity,
        domain=domain(incident)[0][:256],
        state="resolved" if incident.resolved else "open",
        opened_at=incident.opened_at,
        first_fault_at=incident.first_fault_at,
        last_fault_at=incident.last_fault_at,
        resolved_at=incident.resolved_at,
        nodes=folded(list(incident.members)),
        nodes_count=len(incident.members) + incident.uncounted,
        states=dict(Counter(incident.members.values()).most_common(64)),
        decided_by=incident.decided_by,
        refused=incident.refused,
        held_by=incident.held_by,
        jobs=incident.jobs,
        notes=incident.notes,
        notes_count=incident.notes_count,
    )


def incident_event_type(before: Incident | None, after: Incident) -> type[IncidentEvent]:
    """Opened the first time it is published, resolved when it became so, else updated."""
    if before is None or before.opened_at is None:
        return IncidentOpened
    if after.resolved and not before.resolved:
        return IncidentResolved
    return IncidentUpdated
