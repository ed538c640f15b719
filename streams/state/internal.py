"""Events the brain derives for itself: re-keyed job facts and action results, decisions about
nodes, clock ticks.

They are not part of the contract (never on a catalog topic): the pure brain hands them to itself
in memory; the Faust app sends them through its own internal topic so that the entity they are
about (a node, a node set) is updated on the partition that owns it. Their ids derive from their
cause, so a redelivered cause yields the same derived event.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from typing import Literal

import orjson
from pydantic import Field

from schemas.envelope import Event, Payload
from schemas.events import JobState
from schemas.events.triggers import Rung, Severity

_NAMESPACE = uuid.UUID("0d7f3f0e-93c4-4d8e-b0a8-5f2a4c1b7e21")
NODE_SET_PREFIX = "nodeset:"
NODE_SET_NAMES_MAX = 448  # within `bounds.ID_CHARS_MAX` with the prefix


def derived_id(*parts: object) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, "\x1f".join(str(p) for p in parts))


def node_set_key(nodes: tuple[str, ...] | list[str]) -> str:
    """The node set's key: its nodes, named; a digest of them when that would be too long to be
    a key (the key travels with every record of the set, changelog included)."""
    names = ",".join(sorted(set(nodes)))
    if len(names) > NODE_SET_NAMES_MAX:
        names = "sha256:" + hashlib.sha256(names.encode()).hexdigest()
    return NODE_SET_PREFIX + names


class NodeJobObservedPayload(Payload):
    job_id: str
    attempt: int
    state: JobState
    running: bool
    failure: bool
    cause: uuid.UUID
    # How many nodes the attempt ran on (0 in records written before it was carried): a big
    # job's repeated failures are judged node by node (`repeated_failures_on_node_set`).
    job_nodes: int = Field(default=0, ge=0)


class NodeJobObserved(Event):
    """A job attempt started or ended on this node (`subject` is the node id)."""

    type: Literal["NodeJobObserved"] = "NodeJobObserved"
    payload: NodeJobObservedPayload


class NodeSetFailedPayload(Payload):
    nodes: tuple[str, ...] = Field(min_length=1)
    job_id: str
    attempt: int
    cause: uuid.UUID


class NodeSetFailed(Event):
    """A job attempt failed on this set of nodes (`subject` is `node_set_key(nodes)`)."""

    type: Literal["NodeSetFailed"] = "NodeSetFailed"
    payload: NodeSetFailedPayload


# The node's quarantine story: what was decided for a node, and what the action workers report
# (the remediation ladder's rungs among them).
StoryTrigger = Literal[
    "QuarantineNodes", "RunBenchmark", "ReleaseNodes", "ResetGpus", "RebootNodes", "EscalateNodes"
]


class NodeDecidedPayload(Payload):
    trigger_id: uuid.UUID
    trigger_type: StoryTrigger
    reason: str
    rule: str = ""  # empty in records written before it was carried
    ladder: tuple[Rung, ...] | None = None  # the rungs left after this step, if on a ladder
    batched: bool = False  # a drain that waits its turn in a batch (a big job's suspects)
    fault: str | None = None  # what kind of fault (incidents group by it); None: the rule's
    severity: Severity = "warning"


class NodeDecided(Event):
    """The brain asked for an action on this node (`subject` is the node id); nothing is done
    yet: the node's state moves on the action's result, not on this."""

    type: Literal["NodeDecided"] = "NodeDecided"
    payload: NodeDecidedPayload


class NodeActionReportedPayload(Payload):
    trigger_id: uuid.UUID
    trigger_type: StoryTrigger
    action: str
    succeeded: bool
    refused: bool = False  # the worker did not act at all (breaker, allowlist, a silence)
    error: str | None = None
    cause: uuid.UUID
    operator: str | None = None  # who commanded it, when an operator did
    reason: str | None = None  # the trigger's reason
    decided_at: datetime | None = None  # the trigger's event time (None: an older result)
    held_by: str | None = None  # the silence that held it


class NodeActionReported(Event):
    """An action worker reports the outcome of an action on this node (`subject`: node id)."""

    type: Literal["NodeActionReported"] = "NodeActionReported"
    payload: NodeActionReportedPayload


class JobActionReportedPayload(Payload):
    trigger_id: uuid.UUID
    trigger_type: Literal["RestartJob"]
    succeeded: bool
    error: str | None = None
    cause: uuid.UUID


class JobActionReported(Event):
    """An action worker reports what it did about this job (`subject`: the job id): a job is
    restarting once its requeue succeeded, not when a rule asked for it."""

    type: Literal["JobActionReported"] = "JobActionReported"
    payload: JobActionReportedPayload


class JobNodesImplicatedPayload(Payload):
    nodes: tuple[str, ...] = Field(min_length=1)
    reason: str
    trigger_id: uuid.UUID  # the quarantine that implicated them
    cause: uuid.UUID  # the action result that told it
    # The drain succeeded and the quarantine asked to move its jobs off the nodes: the job is
    # restarted from its checkpoint now, not when it ends by itself (`slow_node`).
    move: bool = False


class JobNodesImplicated(Event):
    """Nodes this job ran on (or failed on) were decided out of service (`subject`: the job
    id): a restart of the job avoids them. Told by the quarantine's action results, which every
    part of the brain folds, so nothing a node decides reaches a job directly."""

    type: Literal["JobNodesImplicated"] = "JobNodesImplicated"
    payload: JobNodesImplicatedPayload


class NodeJobPacedPayload(Payload):
    job_id: str
    attempt: int
    gpus: int | None = None  # the job's, where it said
    nodes: int = 0  # how many it runs on
    ratio: float | None = None  # this node's step time over the job's other hosts', if behind
    behind_since: datetime | None = None
    slowdown: float | None = None  # the job's step time over its best this attempt, if it logs
    checkpoint_at: datetime | None = None  # its last checkpoint, and where it resumes from
    checkpoint_step: int | None = None
    cadence_s: float | None = None  # how often it saves them
    # The job's other hosts wait for this one at their collectives (`streams.state.waits`):
    # since when, their time over this host's, the wait, at which collective most.
    waited_since: datetime | None = None
    waited_ratio: float | None = None
    waited_ms: float | None = None
    waited_at: str | None = None


class NodeJobPaced(Event):
    """How fast a job running on this node goes, as the job knows it (`subject`: the node id):
    its step times, this host's against the others', its checkpoints' cadence. Told by the job on
    each change of what it says (`streams.state.job_pace`), so the node can weigh its own signs of
    slowness against what they cost the job (`slow_node`)."""

    type: Literal["NodeJobPaced"] = "NodeJobPaced"
    payload: NodeJobPacedPayload


class NodePeerNamedPayload(Payload):
    job_id: str
    peer: str  # as the line wrote it
    by: str | None = None  # the node whose log line it was, when the tailer said
    cause: uuid.UUID  # the log signal


class NodePeerNamed(Event):
    """A job's log line names this node as the other end that failed (`subject`: the node id),
    as the job resolved the line's peer among its nodes (`streams.state.peers`)."""

    type: Literal["NodePeerNamed"] = "NodePeerNamed"
    payload: NodePeerNamedPayload


# Incidents (streams.state.incidents): a node's fault is told to its cluster's book for that
# kind of fault, which names the incident it joins; from then on the node tells the incident
# every change of its state, until it is settled.
INCIDENT_BOOK_PREFIX = "incidents:"


def incident_book_key(cluster: str, fault: str) -> str:
    return f"{INCIDENT_BOOK_PREFIX}{cluster}:{fault}"


class FaultReportedPayload(Payload):
    node: str
    fault: str
    window_s: float  # the correlation window the node's engine was configured with


class FaultReported(Event):
    """A node's trouble began (`subject`: the book of its cluster and kind of fault)."""

    type: Literal["FaultReported"] = "FaultReported"
    payload: FaultReportedPayload


class IncidentAssignedPayload(Payload):
    incident: str
    fault: str


class IncidentAssigned(Event):
    """The book named the incident a node's fault belongs to (`subject`: the node id)."""

    type: Literal["IncidentAssigned"] = "IncidentAssigned"
    payload: IncidentAssignedPayload


class IncidentMemberReportedPayload(Payload):
    node: str
    fault: str
    state: str  # the node's state as people read it (NodeCondition)
    # Nothing more happens to it without a new fault or a person; None (records before it was
    # told): as its state says (`streams.state.condition.SETTLED`).
    settled: bool | None = None
    severity: Severity = "warning"
    reason: str | None = None
    decided_by: str | None = None
    problem: str | None = None  # what went wrong or refused it
    held_by: str | None = None
    switch: str | None = None
    partitions: tuple[str, ...] = ()
    jobs: tuple[str, ...] = ()
    note: str | None = None  # a step people must see (kept out, escalated, resumed by hand)


class IncidentMemberReported(Event):
    """A member's state as it is now (`subject`: the incident id)."""

    type: Literal["IncidentMemberReported"] = "IncidentMemberReported"
    payload: IncidentMemberReportedPayload


class TickPayload(Payload):
    pass


class JobTick(Event):
    """Time passed for a job: lets rules notice what did *not* happen (checkpoint stall)."""

    type: Literal["JobTick"] = "JobTick"
    payload: TickPayload = TickPayload()


class NodeTick(Event):
    """Time passed for a node: lets rules notice a heartbeat that did not come."""

    type: Literal["NodeTick"] = "NodeTick"
    payload: TickPayload = TickPayload()


def tick(cls: type[Event], subject: str, cluster: str, now: datetime) -> Event:
    return cls.model_validate(
        {
            "event_id": derived_id(cls.__name__, subject, now.isoformat()),
            "source": "streams/clock",
            "cluster": cluster,
            "subject": subject,
            "occurred_at": now,
            "observed_at": now,
            "payload": {},
        }
    )


_INTERNAL: dict[str, type[Event]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        NodeJobObserved,
        NodeSetFailed,
        NodeDecided,
        NodeActionReported,
        JobActionReported,
        JobNodesImplicated,
        NodeJobPaced,
        NodePeerNamed,
        FaultReported,
        IncidentAssigned,
        IncidentMemberReported,
        JobTick,
        NodeTick,
    )
}


def decode_internal(raw: bytes) -> Event:
    """Bytes of one internal event (as `schemas.codec.encode` wrote it) → the event."""
    doc = orjson.loads(raw)
    return _INTERNAL[doc["type"]].model_validate(doc)
