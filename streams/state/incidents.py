"""Incidents: what shares a cause, so people are told once.

A node whose trouble begins (`streams.state.node_incidents`) tells the **book** of its cluster and
kind of fault (`xid:79`, `heartbeat_lost`, `health:nvlink`, a rule's name). The book names the
incident it joins: the one it opened last, while faults of that kind keep coming within the
window of one another, else a new one. So 143 nodes that stop sending heartbeats within seconds
are one incident, and a lone fatal XID an hour later is an incident of its own (its node's story
from the fault to its release).

The **incident** keeps each member's state as the member last told it, and the narrowest
failure domain every member shares (a switch, a job, a partition, else the cluster). It is
resolved once every member is settled (back in service, refused, held, escalated or taken by
people); a member that joins a resolved incident opens it again. What people read of it
(`streams.brain.views.incident_view`) is published on the `incidents` topic whenever it changes.

Keys: a book is `incidents:<cluster>:<fault>`; an incident is its id, `inc-` and ten hex
digits derived from its book and first fault, so replay names it alike.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import singledispatch

from pydantic import ConfigDict, Field

from schemas.envelope import Event
from schemas.events.incidents import INCIDENT_PREFIX
from schemas.events.triggers import Severity
from schemas.groups import Facts
from schemas.limits import MAX_NODES, SMALL_LIST
from streams.state.bounds import ID_CHARS_MAX, clip
from streams.state.condition import SETTLED
from streams.state.dispatch import by_type
from streams.state.internal import (
    FaultReported,
    IncidentAssigned,
    IncidentMemberReported,
    derived_id,
)
from streams.state.stamp import Entity, stamped

WINDOW_S = 60.0  # the default correlation window (CENTRALITY_STREAMS_INCIDENT_WINDOW_S)
MIXED = "\x00"  # a domain the members do not share
DOMAINS = ("switch", "job", "partition")  # narrowest first; the cluster holds them all
KEPT = 16  # rules, silences, jobs named
NOTES_KEPT = 32


class IncidentBook(Entity):
    """The incidents of one kind of fault in one cluster: which one a new fault joins."""

    model_config = ConfigDict(frozen=True)

    key: str
    cluster: str
    fault: str = ""
    current: str | None = None  # the incident faults join while they keep coming
    last_fault_at: datetime | None = None
    opened: int = 0

    @classmethod
    def new(cls, event: Event) -> IncidentBook:
        return cls(key=event.subject, cluster=event.cluster)

    @property
    def group_facts(self) -> Facts:
        return Facts("incident_books", self.cluster)


class Incident(Entity):
    model_config = ConfigDict(frozen=True)

    key: str
    cluster: str
    fault: str = ""
    severity: Severity = "warning"
    cause: str = ""  # the first member's reason
    opened_at: datetime | None = None
    first_fault_at: datetime | None = None
    last_fault_at: datetime | None = None
    resolved_at: datetime | None = None
    # node → its state as it last told it; beyond MAX_NODES members are counted, not named.
    members: dict[str, str] = Field(default_factory=dict)
    unsettled: int = 0  # members not settled: none left, the incident is resolved
    # Members settled though their state does not say so: people quarantined them (`by`).
    at_rest: tuple[str, ...] = ()
    uncounted: int = 0
    domains: dict[str, str] = Field(default_factory=dict)  # DOMAINS → shared value or MIXED
    decided_by: tuple[str, ...] = ()
    refused: str | None = None  # the first refusal's words (the circuit breaker's figures)
    held_by: tuple[str, ...] = ()
    jobs: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # the latest NOTES_KEPT steps people must see
    notes_count: int = 0  # every note so far: a teller tells those past what it told

    @classmethod
    def new(cls, event: Event) -> Incident:
        return cls(key=event.subject, cluster=event.cluster)

    @property
    def group_facts(self) -> Facts:
        return Facts("incidents", self.cluster)

    @property
    def resolved(self) -> bool:
        return self.resolved_at is not None


def incident_id(book: str, first_fault_at: datetime) -> str:
    return INCIDENT_PREFIX + derived_id("incident", book, first_fault_at.isoformat()).hex[:10]


def apply_book(state: IncidentBook | None, event: Event) -> IncidentBook:
    current = state or IncidentBook.new(event)
    return stamped(state, current, _book_folded(event, current), event)


@singledispatch
def fold_book(event: Event, state: IncidentBook) -> IncidentBook:
    return state


_book_folded = by_type(fold_book)


@fold_book.register
def _(event: FaultReported, state: IncidentBook) -> IncidentBook:
    at, last = event.occurred_at, state.last_fault_at
    window = timedelta(seconds=event.payload.window_s)
    joins = state.current is not None and last is not None and abs(at - last) <= window
    if joins:
        return state.model_copy(update={"last_fault_at": max(at, last)})  # type: ignore[type-var]
    update = {
        "fault": event.payload.fault,
        "current": incident_id(state.key, at),
        "last_fault_at": at,
        "opened": state.opened + 1,
    }
    return state.model_copy(update=update)


def assigned(book: IncidentBook, event: Event) -> list[Event]:
    """The book tells the node that reported a fault which incident it joins."""
    if not isinstance(event, FaultReported) or book.current is None:
        return []
    p = event.payload
    return [
        IncidentAssigned(
            event_id=derived_id("assigned", event.event_id),
            source="streams",
            cluster=event.cluster,
            subject=p.node,
            occurred_at=event.occurred_at,
            payload={"incident": book.current, "fault": p.fault},
        )
    ]


def apply(state: Incident | None, event: Event) -> Incident:
    current = state or Incident.new(event)
    return stamped(state, current, _folded(event, current), event)


@singledispatch
def fold(event: Event, state: Incident) -> Incident:
    return state


_folded = by_type(fold)


@fold.register
def _(event: IncidentMemberReported, state: Incident) -> Incident:
    p, at = event.payload, event.occurred_at
    if len(p.node) > ID_CHARS_MAX:
        return state
    before = state.members.get(p.node)
    if before is None and len(state.members) >= MAX_NODES:
        return state.model_copy(update={"uncounted": state.uncounted + 1})
    if before == p.state:
        return state  # told again (a redelivery): nothing new
    was_unsettled = before is not None and before not in SETTLED and p.node not in state.at_rest
    now_settled = p.state in SETTLED if p.settled is None else p.settled
    unsettled = state.unsettled - was_unsettled + (not now_settled)
    at_rest = tuple(n for n in state.at_rest if n != p.node)
    update: dict[str, object] = {
        "members": {**state.members, p.node: p.state},
        "at_rest": at_rest + ((p.node,) if now_settled and p.state not in SETTLED else ()),
        "unsettled": unsettled,
        "resolved_at": (state.resolved_at or at) if unsettled == 0 else None,
    }
    if before is None:
        update |= _joined(state, event)
    update |= _told(state, event)
    return state.model_copy(update=update)


def _joined(state: Incident, event: IncidentMemberReported) -> dict[str, object]:
    p, at = event.payload, event.occurred_at
    first = state.first_fault_at is None
    shares = {"switch": p.switch, "job": _one(p.jobs), "partition": _one(p.partitions)}
    domains = {
        name: (value or MIXED) if first else _shared(state.domains.get(name), value)
        for name, value in shares.items()
    }
    update: dict[str, object] = {
        "domains": domains,
        "first_fault_at": at if first else min(at, state.first_fault_at),  # type: ignore[type-var]
        "last_fault_at": at if first else max(at, state.last_fault_at),  # type: ignore[type-var]
        "jobs": _kept(state.jobs, p.jobs),
    }
    if first:
        update |= {
            "fault": p.fault,
            "severity": p.severity,
            "cause": clip(p.reason or p.fault),
            "opened_at": at,
        }
    return update


def _told(state: Incident, event: IncidentMemberReported) -> dict[str, object]:
    p = event.payload
    update: dict[str, object] = {}
    if p.decided_by:
        update["decided_by"] = _kept(state.decided_by, (p.decided_by,))
    if p.note:
        update["notes"] = (*state.notes, clip(p.note))[-NOTES_KEPT:]
        update["notes_count"] = state.notes_count + 1
    if p.held_by:
        update["held_by"] = _kept(state.held_by, (p.held_by,))
    elif p.state == "suspect" and p.problem and state.refused is None:
        update["refused"] = clip(p.problem)
    return update


def _one(values: tuple[str, ...]) -> str | None:
    return values[0] if len(values) == 1 else None


def _shared(held: str | None, value: str | None) -> str:
    return held if held is not None and held == value else MIXED


def _kept(held: tuple[str, ...], new: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*held, *new)))[: min(KEPT, SMALL_LIST)]
