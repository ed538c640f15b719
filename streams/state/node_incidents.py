"""A node's side of incidents: when its trouble begins it tells the book of its cluster and kind
of fault, which names the incident it joins (`streams.state.incidents`); from then on it tells
that incident each change of its state, until the state is settled (back in service, refused,
escalated, taken by people). Silence is trouble too: `heartbeat_lost`'s decision marks the node
unreachable until a heartbeat comes.
"""

from __future__ import annotations

from datetime import datetime

from schemas.envelope import Event
from schemas.events import Notify
from streams.state.bounds import clip
from streams.state.condition import condition, settled
from streams.state.internal import (
    FaultReported,
    IncidentAssigned,
    IncidentMemberReported,
    derived_id,
    incident_book_key,
)
from streams.state.node import LOST_RULE, Lost, Node, fold
from streams.state.node_pace import planned
from streams.state.story import Stage

JOBS_TOLD = 8


@fold.register
def _(event: Notify, state: Node) -> Node:
    if event.payload.timing is not None:  # slow_node's, about a job running here
        return planned(event, state)
    last = state.last_heartbeat_at
    if event.payload.rule != LOST_RULE or last is None or state.lost is not None:
        return state
    p = event.payload
    lost = Lost(since=last, why=clip(p.reason), severity=p.severity)
    return state.model_copy(update={"lost": lost})


@fold.register
def _(event: IncidentAssigned, state: Node) -> Node:
    if state.incident is not None or state.fault_told != event.payload.fault:
        return state  # told of a fault since settled, or already in an incident
    update = {"incident": event.payload.incident, "incident_told": None, "fault_told": None}
    return state.model_copy(update=update)


def fault_of(node: Node) -> str | None:
    """The kind of fault the node is in trouble with; None when it is not (or people took it)."""
    state = condition(node)
    if settled(node):
        return None
    if node.story is not None:
        return node.story.fault or node.story.decided_by or "quarantine"
    return LOST_RULE if state == "unreachable" else None


def reports(node: Node, event: Event, window_s: float) -> tuple[Node, list[Event]]:
    """What the node tells about its trouble after `event`, and itself as it remembers that."""
    if node.incident is None:
        fault = fault_of(node)
        if fault is None or fault == node.fault_told:
            return node, []
        told = FaultReported(
            event_id=derived_id("fault", node.node_id, fault, event.event_id),
            source="streams",
            cluster=node.cluster,
            subject=incident_book_key(node.cluster, fault),
            occurred_at=event.occurred_at,
            payload={"node": node.node_id, "fault": fault, "window_s": window_s},
        )
        return node.model_copy(update={"fault_told": fault}), [told]
    state = condition(node)
    if state == node.incident_told:
        return node, []
    update: dict[str, object] = {"incident_told": state}
    if settled(node):  # its part is over: a new fault is a new report
        update |= {"incident": None, "incident_told": None, "fault_told": None}
    return node.model_copy(update=update), [_member(node, node.incident, state, event)]


# The steps of a story people must see, in words (`{problem}`: what went wrong).
_NOTES = {
    Stage.KEPT: "kept out: benchmark {verdict}: {problem}",
    Stage.BENCHMARK_FAILED: "benchmark did not run: {problem}",
    Stage.RELEASE_FAILED: "release failed: {problem}",
    Stage.RUNG_FAILED: "a repair failed: {problem}",
    Stage.ESCALATED: "escalated to a person for hardware service",
    Stage.ESCALATION_FAILED: "escalation failed: {problem}",
}


def note(node: Node, state: str, at: datetime) -> str | None:
    """What people must hear of this step of the node's story, beyond the counts: a verdict that
    keeps it out, a step that failed, a hold, what people did by hand."""
    story, name = node.story, node.node_id
    if story is not None and story.held_by is not None and state == "held":
        return clip(f"{name}: {story.problem}")
    if story is not None and (words := _NOTES.get(story.stage)) is not None:
        told = words.format(verdict=story.verdict or "-", problem=story.problem or "-")
        return clip(f"{name}: {told}")
    ended = node.ended
    if story is None and ended is not None and ended.at == at:
        if ended.how in ("resumed", "taken"):
            return clip(f"{name}: {ended.how} by hand")
        if (ended.by or "").startswith("operator/"):  # what people did is told; rules' is not
            return clip(f"{name}: {ended.how} by {ended.by}")
        if ended.how != "released":  # records of earlier versions: "released by operator …"
            return clip(f"{name}: {ended.how}")
    return None


def _member(node: Node, incident: str, state: str, event: Event) -> IncidentMemberReported:
    story = node.story
    payload: dict[str, object] = {
        "node": node.node_id,
        "fault": (story.fault if story else None) or fault_of(node) or "",
        "state": state,
        "settled": settled(node),
        "switch": node.facts.switch,
        "partitions": node.facts.partitions[:4],
        "jobs": tuple(node.jobs)[:JOBS_TOLD],
    }
    payload["note"] = note(node, state, event.occurred_at)
    if story is not None:
        payload |= {"reason": story.reason, "decided_by": story.decided_by}
        payload |= {"severity": story.severity}
        payload |= {"problem": story.problem, "held_by": story.held_by}
    elif node.lost is not None:
        payload |= {"reason": node.lost.why, "decided_by": LOST_RULE}
        payload |= {"severity": node.lost.severity}
    return IncidentMemberReported(
        event_id=derived_id("member", incident, node.node_id, state, event.event_id),
        source="streams",
        cluster=node.cluster,
        subject=incident,
        occurred_at=event.occurred_at,
        payload=payload,
    )
