"""A node's side of being slow but alive: it tells each job running on it what its GPUs' samples
say holds it back (`streams.state.slowness`), once per change of the signs or of its jobs, and
that nothing does any more once they end. The job weighs it (`slow_node`)."""

from __future__ import annotations

from schemas.envelope import Event
from streams.state.internal import JobNodeSlowed, derived_id
from streams.state.node import Node
from streams.state.slowness import summary


def reports(node: Node, event: Event, window_s: float) -> tuple[Node, list[Event]]:
    """What the node tells its jobs after `event`, and itself as it remembers that."""
    told = _told(node)
    if told == node.slow_told or (not node.slow and node.slow_told is None):
        return node, []
    said, since, slowdown = summary(node.slow)
    payload = {"node": node.node_id, "signs": said, "since": since, "slowdown": slowdown}
    out: list[Event] = [
        JobNodeSlowed(
            event_id=derived_id(event.event_id, node.node_id, job, told),
            source="streams",
            cluster=node.cluster,
            subject=job,
            occurred_at=event.occurred_at,
            payload=payload,
        )
        for job in sorted(node.jobs)
    ]
    return node.model_copy(update={"slow_told": told if node.slow else None}), out


def _told(node: Node) -> str | None:
    """What the jobs are told, in a word: the signs' kinds and GPUs, and the jobs there (a job
    that starts on a slow node is told too). Words that change each sample (clocks) are not in
    it: a job hears of a sign once, not every interval."""
    if not node.slow:
        return None
    return ",".join(sorted(node.slow)) + "|" + ",".join(sorted(node.jobs))
