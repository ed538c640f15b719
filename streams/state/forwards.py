"""What an event or a decision means for *other* entities: re-keyed facts and feedback.

A job attempt running or ending on nodes concerns those nodes and their node set; a decision
about nodes (quarantine, benchmark, release) and the action result that answers it concern every
node it names (results are keyed by the trigger's subject, which may be a node set). The pure
brain handles these derived events at once; the Faust app routes them through its internal topic
to the partition owning the subject.
"""

from __future__ import annotations

from functools import singledispatch
from typing import get_args

from schemas.envelope import Event
from schemas.events import (
    ActionFailed,
    ActionHeld,
    ActionStarted,
    ActionSucceeded,
    EscalateNodes,
    JobExited,
    JobState,
    JobStateChanged,
    QuarantineNodes,
    RebootNodes,
    ReleaseNodes,
    ResetGpus,
    RunBenchmark,
)
from schemas.events.actions import ActionFailedPayload, ActionHeldPayload
from schemas.events.jobs import is_failure
from streams.state.bounds import NODE_SET_NODES_KEPT, NODES_BYTES_KEPT, node_ids
from streams.state.internal import (
    JobActionReported,
    JobNodesImplicated,
    NodeActionReported,
    NodeDecided,
    NodeJobObserved,
    NodeSetFailed,
    derived_id,
    node_set_key,
)

NODES_FORWARDED_MAX = 4096


def _nodes(nodes: tuple[str, ...]) -> tuple[str, ...]:
    return node_ids(dict.fromkeys(nodes), NODES_FORWARDED_MAX, 2**62)


@singledispatch
def forwards(event: Event) -> list[Event]:
    return []


def _node_job(event: Event, node: str, **payload: object) -> NodeJobObserved:
    return NodeJobObserved(
        event_id=derived_id(event.event_id, node),
        source="streams",
        cluster=event.cluster,
        subject=node,
        occurred_at=event.occurred_at,
        payload={"job_id": event.subject, "cause": event.event_id, **payload},
    )


@forwards.register
def _(event: JobStateChanged) -> list[Event]:
    p = event.payload
    if p.state is not JobState.RUNNING:
        return []
    return [
        _node_job(event, n, attempt=p.attempt, state=p.state, running=True, failure=False)
        for n in _nodes(p.nodes)
    ]


@forwards.register
def _(event: JobExited) -> list[Event]:
    p = event.payload
    failed = is_failure(p)
    job_nodes = len(set(p.nodes))  # once: per node it made a big job's exit quadratic
    out: list[Event] = [
        _node_job(
            event,
            n,
            attempt=p.attempt,
            state=p.state,
            running=False,
            failure=failed,
            job_nodes=job_nodes,
        )
        for n in _nodes(p.nodes)
    ]
    if failed and p.nodes:
        key = node_set_key(p.nodes)
        out.append(
            NodeSetFailed(
                event_id=derived_id(event.event_id, key),
                source="streams",
                cluster=event.cluster,
                subject=key,
                occurred_at=event.occurred_at,
                payload={
                    "nodes": node_ids(sorted(set(p.nodes)), NODE_SET_NODES_KEPT, NODES_BYTES_KEPT),
                    "job_id": event.subject,
                    "attempt": p.attempt,
                    "cause": event.event_id,
                },
            )
        )
    return out


STORY_TRIGGERS = (
    "QuarantineNodes",
    "RunBenchmark",
    "ReleaseNodes",
    "ResetGpus",
    "RebootNodes",
    "EscalateNodes",
)
NodeTrigger = (
    QuarantineNodes | RunBenchmark | ReleaseNodes | ResetGpus | RebootNodes | EscalateNodes
)


def _decided(trigger: NodeTrigger) -> list[Event]:
    ladder = getattr(trigger.payload, "ladder", None)
    return [
        NodeDecided(
            event_id=derived_id(trigger.event_id, node),
            source="streams",
            cluster=trigger.cluster,
            subject=node,
            occurred_at=trigger.occurred_at,
            payload={
                "trigger_id": trigger.event_id,
                "trigger_type": trigger.type,
                "reason": trigger.payload.reason,
                "rule": trigger.payload.rule,
                "ladder": ladder,
                "batched": getattr(trigger.payload, "batch", None) is not None,
                "fault": trigger.payload.fault,
                "severity": trigger.payload.severity,
            },
        )
        for node in _nodes(trigger.payload.nodes)
    ]


for _trigger in get_args(NodeTrigger):
    forwards.register(_trigger, _decided)


def _implicated(result: ActionStarted | ActionSucceeded | ActionFailed | ActionHeld) -> list[Event]:
    """A quarantine's results (any of them: the decision implicates, whatever its outcome) tell
    the jobs it named that its nodes are out: their restarts avoid them."""
    p = result.payload
    if p.trigger_type != "QuarantineNodes" or not p.jobs or not p.nodes or p.dry_run:
        return []
    return [
        JobNodesImplicated(
            event_id=derived_id(result.event_id, job),
            source="streams",
            cluster=result.cluster,
            subject=job,
            occurred_at=result.occurred_at,
            payload={
                "nodes": _nodes(p.nodes),
                "reason": p.reason or p.action,
                "trigger_id": p.trigger_id,
                "cause": result.event_id,
                "move": p.move_jobs and isinstance(result, ActionSucceeded),
            },
        )
        for job in p.jobs
    ]


forwards.register(ActionStarted, _implicated)


def _reported(result: ActionSucceeded | ActionFailed | ActionHeld) -> list[Event]:
    p = result.payload
    failed = p if isinstance(p, ActionFailedPayload) else None
    held = p if isinstance(p, ActionHeldPayload) else None
    # A dry run did nothing: what was only planned must not move any state.
    if p.dry_run:
        return []
    implicated = _implicated(result)
    if p.trigger_type == "RestartJob":
        return [
            JobActionReported(
                event_id=derived_id(result.event_id, result.subject),
                source="streams",
                cluster=result.cluster,
                subject=result.subject,
                occurred_at=result.occurred_at,
                payload={
                    "trigger_id": p.trigger_id,
                    "trigger_type": p.trigger_type,
                    "succeeded": failed is None and held is None,
                    "error": failed.error if failed else held.said if held else None,
                    "cause": result.event_id,
                },
            )
        ]
    if p.trigger_type not in STORY_TRIGGERS:
        return []
    return implicated + [
        NodeActionReported(
            event_id=derived_id(result.event_id, node),
            source="streams",
            cluster=result.cluster,
            subject=node,
            occurred_at=result.occurred_at,
            payload={
                "trigger_id": p.trigger_id,
                "trigger_type": p.trigger_type,
                "action": p.action,
                "succeeded": isinstance(result, ActionSucceeded),
                "refused": held is not None or (failed is not None and failed.refused),
                "error": failed.error if failed else held.said if held else None,
                "cause": result.event_id,
                "operator": p.operator,
                "reason": p.reason,
                "decided_at": p.decided_at,
                "held_by": held.held_by if held else failed.held_by if failed else None,
            },
        )
        for node in p.nodes
    ]


forwards.register(ActionSucceeded, _reported)
forwards.register(ActionFailed, _reported)
forwards.register(ActionHeld, _reported)
