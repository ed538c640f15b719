"""Suspects first: a big job's repeated failures take out only the nodes its failures point at.

The culprit of a job failing on hundreds of nodes is usually one node among them; draining them
all stops everyone's work to find it. So above `suspects_over_nodes`, the node set's rule only
tells people, and each node of the job judges itself on the failures it saw (every node hears
each failed attempt that ran on it, and the job's NCCL errors that name it as the failing peer:
`streams.state.peers`): once the job failed `threshold` times within a window on
it, the node is a suspect when its own evidence in that window says so, and asks for its own
quarantine (then benchmarked by `quarantine_story`: released if it passes, kept if not). The
rest stay in service. The job's suspects are one batch: the action workers drain at most
`batch_nodes` of them at once, the next as each is benchmarked (`actions.batches`), so even a
fault that implicates many nodes never takes them all out together.

Judged on each node, because a node's evidence lives in the node's state: forwards run from jobs
and node sets to nodes, never back (`streams.brain.parts`), so no node set can gather it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from schemas.events import QuarantineBatch, Trigger
from schemas.limits import listed
from streams.rules.builtin.quarantine import quarantine
from streams.rules.registry import RuleConfig
from streams.state.internal import NodeJobObserved
from streams.state.node import Node
from streams.state.windows import WindowConfig, in_window, window_starts

EVIDENCE = (
    "XIDs, failed health checks, error lines naming the node as the failing end (NCCL's broken "
    "connections, a launcher's crashed rank), other jobs failing on the same node"
)


def evidence(node: Node, job_id: str, since: datetime) -> list[str]:
    """What, since `since`, says that `node` rather than the job failed."""
    why: list[str] = []
    xids = sorted({x.xid for x in node.xids if x.at >= since})
    if xids:
        why.append(f"XID {listed(map(str, xids), 128)}")
    checks = sorted({h.check for h in node.health_failures if h.at >= since})
    if checks:
        why.append(f"failed health check {listed(checks, 256)}")
    named = [n for n in node.named_as_peer if n.at >= since]
    if named:
        by = sorted({n.by for n in named if n.by is not None})
        on = f" on {listed(by, 256)}" if by else ""
        why.append(f"named as the failing end by {len(named)} error line(s){on}")
    others = sorted({f.job_id for f in node.failures if f.at >= since and f.job_id != job_id})
    if others:
        why.append(f"other jobs failed here too ({listed(others, 512)})")
    return why


def suspect(
    *,
    name: str,
    node: Node,
    event: NodeJobObserved,
    config: RuleConfig,
    threshold: int,
    window: WindowConfig,
    batch_nodes: int,
) -> Iterator[Trigger]:
    """The node's own quarantine, once the big job failed `threshold` times on it within a
    window and its evidence names it; nothing otherwise."""
    p = event.payload
    if not node.may_quarantine_at(event.occurred_at) or node.waiting_turn:  # asked once per episode
        return
    for start in window_starts(event.occurred_at, window):
        failed = [f for f in in_window(node.failures, start, window) if f.job_id == p.job_id]
        if len(failed) < threshold:
            continue
        why = evidence(node, p.job_id, start)
        if not why:
            return
        yield quarantine(
            rule=name,
            cause=event,
            nodes=(node.node_id,),
            window=f"{node.episode(event.occurred_at)}/suspect",
            reason=(
                f"suspect of {len(failed)} failed attempts of {p.job_id} on {p.job_nodes} nodes "
                f"within {window.window_s:.0f} s: {'; '.join(why)}; drained {batch_nodes} at a "
                "time with the job's other suspects"
            ),
            config=config,
            caused_by=tuple(f.cause for f in failed),
            jobs=(p.job_id,),
            batch=QuarantineBatch(name=f"suspects of {p.job_id}", most_out=batch_nodes),
        )
        return
