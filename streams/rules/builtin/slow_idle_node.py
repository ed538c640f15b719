"""A node slow but alive with no job on it → ask for its quarantine at once, as any node fault.

Its GPUs' own samples say what holds it back (`streams.state.slowness`); held for `evidence_s`
so that a throttle lasting a few samples takes nothing out. With a job running, the job decides
when, by what it costs (`slow_node`).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from pydantic import Field

from schemas.events import GpuSampled, QuarantineNodes
from streams.rules.builtin.quarantine import quarantine
from streams.rules.registry import RuleConfig, rule
from streams.state.internal import NodeTick
from streams.state.node import Node
from streams.state.slowness import summary

NAME = "slow_idle_node"


class SlowIdleNodeConfig(RuleConfig):
    evidence_s: float = Field(
        default=300.0, ge=0, description="How long it must have been slow before deciding."
    )


def _since(node: Node) -> datetime | None:
    return summary(node.slow)[1] if node.slow and not node.jobs else None


def _due(node: Node, config: SlowIdleNodeConfig) -> list[datetime]:
    since = _since(node)
    return [] if since is None else [since + timedelta(seconds=config.evidence_s)]


@rule(NAME, on=(GpuSampled, NodeTick), config=SlowIdleNodeConfig, due=_due)
def slow_idle_node(
    node: Node, event: GpuSampled | NodeTick, config: SlowIdleNodeConfig
) -> Iterator[QuarantineNodes]:
    since = _since(node)
    now = event.occurred_at
    if since is None or (now - since).total_seconds() < config.evidence_s:
        return
    if not node.may_quarantine_at(now):
        return
    said = "; ".join(summary(node.slow)[0])
    yield quarantine(
        rule=NAME,
        cause=event,
        nodes=(node.node_id,),
        window=node.episode(now),
        reason=f"slow with no job on it since {since.isoformat()}: {said}",
        config=config,
        fault="slow",
    )
