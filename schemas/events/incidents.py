"""Incidents: what shares a cause, told to people once.

An incident groups the nodes whose trouble shares a cause: one node's story from its first fault
to its release or escalation, or many nodes with the same kind of fault (lost heartbeats, the
same XID class, the same failing health check) within a short window in one cluster. The streams
app keeps them (`streams.state.incidents`) and publishes each incident whole whenever what people
read of it changes: opened, updated, resolved. Keyed by the incident's id on a compacted topic,
so `centrality incidents`, the client and the Slack teller read back the current state of every
incident, and ClickHouse keeps each version.

Each node's status names the incident it belongs to (`NodeStatusPayload.incident`): that, not a
list here, is the full membership; `nodes` is the members folded into a hostlist, cut to fit.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from schemas.envelope import Event, Payload
from schemas.events.triggers import Severity, Trigger
from schemas.limits import (
    MAP_ENTRIES,
    NAME,
    SMALL_LIST,
    SUBJECT,
    TEXT,
    UINT32_MAX,
    Key,
    Str,
    Timestamp,
)
from schemas.registry import event

INCIDENT_PREFIX = "inc-"
NODE_THREAD_PREFIX = "node:"
# A node's story: told through the node's incident (its parent message and notes), never one
# message per step.
NODE_STORY = frozenset(
    {"QuarantineNodes", "RunBenchmark", "ReleaseNodes", "ResetGpus", "RebootNodes", "EscalateNodes"}
)


def node_thread(cluster: str, node: str) -> str:
    """The thread a rule's Notify about a node's story names: its incident tells it."""
    return f"{NODE_THREAD_PREFIX}{cluster}/{node}"


def told_by_incident(trigger: Trigger) -> bool:
    """Whether people hear of `trigger` through its nodes' incident rather than a message of
    its own: a rule's step of a node's story, or a rule's Notify naming a node's thread.
    Operators' commands are told on their own (they are people's, not a fault's)."""
    p = trigger.payload
    if p.operator is not None:
        return False
    if trigger.type in NODE_STORY:
        return True
    return str(getattr(p, "incident", "")).startswith(NODE_THREAD_PREFIX)


class IncidentPayload(Payload):
    title: str = Field(
        max_length=TEXT,
        description="One line for people: how many nodes, what they share, where, within what.",
    )
    kind: str = Field(
        max_length=NAME,
        description="What the members share: `heartbeat_lost`, `fatal_xid:79`, "
        "`health:nvlink`, `<rule>`, `operator:<name>`. Members join by kind and cluster.",
    )
    cause: str = Field(max_length=TEXT, description="The kind in words, with the first reason.")
    severity: Severity = "warning"
    domain: str = Field(
        max_length=NAME,
        description="The narrowest failure domain holding every member: `switch <name>`, "
        "`rack <name>`, `partition <name>`, `job <id>` or `cluster <name>`.",
    )
    state: Literal["open", "resolved"] = "open"
    opened_at: Timestamp
    first_fault_at: Timestamp = Field(description="The first member's fault (event time).")
    last_fault_at: Timestamp = Field(description="The latest member's fault (event time).")
    resolved_at: Timestamp | None = None
    nodes: str = Field(
        default="",
        max_length=TEXT,
        description="The members as a hostlist (`gpu-[001-143]`), cut with `…` to fit.",
    )
    nodes_count: int = Field(default=0, ge=0, le=UINT32_MAX)
    states: dict[Key, int] = Field(
        default_factory=dict,
        max_length=MAP_ENTRIES,
        description="Members by their node state now (`quarantined`, `unreachable`, ...); "
        "`in_service` counts those back.",
    )
    decided_by: tuple[str, ...] = Field(
        default=(), max_length=SMALL_LIST, description="The rules or `operator/<name>` involved."
    )
    refused: str | None = Field(
        default=None,
        max_length=TEXT,
        description="Why some members were not taken out (the circuit breaker's words and "
        "figures), told once.",
    )
    held_by: tuple[str, ...] = Field(
        default=(), max_length=SMALL_LIST, description="Silences that held decisions about it."
    )
    jobs: tuple[str, ...] = Field(
        default=(), max_length=SMALL_LIST, description="Jobs running on its nodes at the fault."
    )
    notes: tuple[Str, ...] = Field(
        default=(),
        max_length=SMALL_LIST,
        description="The latest steps people must see, one line each (`gpu-07: kept out: "
        "benchmark fail: …`, `gpu-09: resumed by hand`): a teller replies with those past "
        "what it told.",
    )
    notes_count: int = Field(default=0, ge=0, le=UINT32_MAX, description="Notes so far, in all.")


class IncidentEvent(Event):
    subject: str = Field(min_length=1, max_length=SUBJECT, description="The incident's id.")
    payload: IncidentPayload


@event(topic="incidents")
class IncidentOpened(IncidentEvent):
    type: Literal["IncidentOpened"] = "IncidentOpened"


@event(topic="incidents")
class IncidentUpdated(IncidentEvent):
    type: Literal["IncidentUpdated"] = "IncidentUpdated"


@event(topic="incidents")
class IncidentResolved(IncidentEvent):
    type: Literal["IncidentResolved"] = "IncidentResolved"


INCIDENT_TYPES: tuple[type[IncidentEvent], ...] = (
    IncidentOpened,
    IncidentUpdated,
    IncidentResolved,
)
