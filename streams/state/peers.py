"""A job's log line naming the end that failed, told to that node.

NCCL names a broken connection's remote end by host or address, a launcher the host of a rank
that crashed (`LogSignalDetected.peer`, read at the edge: `collectors.logs.peers`). Only the job
knows which nodes it ran on, so the job resolves the peer among its nodes and tells the node it
names (`NodePeerNamed`): evidence against that node (`rules.builtin.suspects`). Like every
forward, it runs from a job to a node, never back.

Resolved, and only where exactly one node matches: the same name; the same first label (a short
name for a fully qualified node name, or the reverse); for an IPv4 address, the name clouds
derive from it (EC2's `ip-10-0-0-12`) or the address itself as a node id. An address no node id
spells names nothing here: the fleet's address map is not in the events. Peers are looked for
among the nodes the job's state keeps (`bounds.JOB_NODES_KEPT`, the first of its node list).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from schemas.envelope import Event
from schemas.events import LogSignalDetected
from streams.state.internal import NodePeerNamed, derived_id
from streams.state.training_job import TrainingJob

_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")


def resolve(peer: str, nodes: Iterable[str]) -> str | None:
    """The one node of `nodes` that `peer` names; None where none or several do."""
    nodes = tuple(nodes)
    if peer in nodes:
        return peer
    first = "ip-" + peer.replace(".", "-") if _IPV4.fullmatch(peer) else peer.split(".")[0]
    found = {n for n in nodes if n.split(".")[0] == first}
    return found.pop() if len(found) == 1 else None


def told(job: TrainingJob, event: Event) -> list[Event]:
    """The node a job's log signal names as the failing peer hears it; nothing otherwise."""
    if not isinstance(event, LogSignalDetected):
        return []
    p = event.payload
    if p.peer is None:
        return []
    node = resolve(p.peer, job.nodes)
    if node is None or node == p.node:
        return []
    return [
        NodePeerNamed(
            event_id=derived_id(event.event_id, node),
            source="streams",
            cluster=event.cluster,
            subject=node,
            occurred_at=event.occurred_at,
            payload={
                "job_id": event.subject,
                "peer": p.peer,
                "by": p.node,
                "cause": event.event_id,
            },
        )
    ]
