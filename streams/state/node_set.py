"""A node set: the exact set of nodes a job attempt ran on, and the failures seen on it."""

from __future__ import annotations

from datetime import datetime
from functools import singledispatch

from pydantic import ConfigDict

from schemas.envelope import Event
from schemas.events import QuarantineNodes
from schemas.groups import NODE_SETS, Facts
from streams.state.bounds import NODE_SET_NODES_KEPT, NODES_BYTES_KEPT, node_ids
from streams.state.dispatch import by_type
from streams.state.internal import NodeSetFailed
from streams.state.stamp import Entity, stamped
from streams.state.windows import Failure, record


class NodeSet(Entity):
    model_config = ConfigDict(frozen=True)

    key: str
    cluster: str
    nodes: tuple[str, ...] = ()
    failures: tuple[Failure, ...] = ()
    quarantines: int = 0
    last_quarantine_at: datetime | None = None

    @classmethod
    def new(cls, event: Event) -> NodeSet:
        return cls(key=event.subject, cluster=event.cluster)

    @property
    def group_facts(self) -> Facts:
        return Facts(NODE_SETS, self.cluster)


def apply(state: NodeSet | None, event: Event) -> NodeSet:
    current = state or NodeSet.new(event)
    return stamped(state, current, _folded(event, current), event)


@singledispatch
def fold(event: Event, state: NodeSet) -> NodeSet:
    """What an event changes in a node set. The types registered here are the ones the `node_sets`
    table owns (`streams.state.entities.Kind`), decisions aside: registering one routes it."""
    return state


_folded = by_type(fold)


@fold.register
def _(event: NodeSetFailed, state: NodeSet) -> NodeSet:
    p = event.payload
    failure = Failure(at=event.occurred_at, job_id=p.job_id, attempt=p.attempt, cause=p.cause)
    return state.model_copy(
        update={
            "nodes": node_ids(p.nodes, NODE_SET_NODES_KEPT, NODES_BYTES_KEPT),
            "failures": record(state.failures, failure),
        }
    )


@fold.register
def _(event: QuarantineNodes, state: NodeSet) -> NodeSet:
    if state.last_quarantine_at == event.occurred_at:
        return state
    return state.model_copy(
        update={"quarantines": state.quarantines + 1, "last_quarantine_at": event.occurred_at}
    )
