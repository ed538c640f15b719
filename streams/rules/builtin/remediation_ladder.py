"""A node on a remediation ladder climbs on each rung's outcome (docs/remediation.md):

- GPUs reset → validate (the benchmark); a reboot the scheduler shows back → validate;
- a reset or reboot failed, was refused (a budget, the breaker) or the node is not back within
  `reboot_timeout_s` → the next rung, or escalation to a person when none is left;
- a rung held by a silence, or an escalation that failed → people are told; the node stays
  drained and the ladder waits for them.

A ladder begins where `quarantine_story` takes a drained node's first step and goes on from a
validation's verdict in `benchmark_verdict`; the plan is in the node's story, so this rule needs
no ladder of its own and does nothing to nodes on none.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from pydantic import Field

from schemas.envelope import Event
from schemas.events import NodeStateObserved, Notify, Trigger
from schemas.events.incidents import node_thread
from streams.rules import ladder
from streams.rules.registry import RuleConfig, Severity, rule
from streams.state.internal import NodeActionReported, NodeTick
from streams.state.node import Node
from streams.state.story import Stage

NAME = "remediation_ladder"


class RemediationLadderConfig(RuleConfig):
    reboot_timeout_s: float = Field(
        default=1800.0,
        gt=0,
        description="A node not back in its scheduler this long after its reboot was taken "
        "failed that rung: the ladder climbs on.",
    )
    severity: Severity = "critical"


def reboot_over(node: Node, config: RemediationLadderConfig) -> list[datetime]:
    story = node.story
    if story is None or story.stage is not Stage.REBOOTING:
        return []
    return [story.since + timedelta(seconds=config.reboot_timeout_s)]


@rule(
    NAME,
    on=(NodeActionReported, NodeStateObserved, NodeTick),
    config=RemediationLadderConfig,
    due=reboot_over,
)
def remediation_ladder(
    node: Node, event: Event, config: RemediationLadderConfig
) -> Iterator[Trigger]:
    story = node.story
    if story is None or story.ladder is None:
        return
    common: dict[str, Any] = {
        "cause": event,
        "source": f"rule/{NAME}",
        "rule": NAME,
        "severity": config.severity,
    }
    if isinstance(event, NodeActionReported):
        p = event.payload
        if p.trigger_id not in story.triggers:
            return
        yield from _reported(node, event, common | {"caused_by": (p.cause,)})
    elif isinstance(event, NodeStateObserved):
        if story.stage is Stage.REBOOTED and story.since == event.occurred_at:
            yield ladder.validate(node, why="back from its reboot", **common)
    elif [at for at in reboot_over(node, config) if at <= event.occurred_at]:
        why = f"not back from its reboot within {config.reboot_timeout_s:g} s"
        climbed = ladder.climb(node, why=why, **common)
        if climbed is not None:
            yield climbed


def _reported(node: Node, event: NodeActionReported, common: dict[str, Any]) -> Iterator[Trigger]:
    story, p = node.story, event.payload
    assert story is not None
    if story.stage is Stage.RESET and p.trigger_type == "ResetGpus":
        yield ladder.validate(node, why="GPUs reset", **common)
    elif story.stage is Stage.REBOOTED and p.trigger_type == "RebootNodes":
        yield ladder.validate(node, why="back from its reboot", **common)  # back before this
    elif story.stage is Stage.RUNG_FAILED and not p.held_by:
        rung = "reset" if p.trigger_type == "ResetGpus" else "reboot"
        how = "was refused" if p.refused else "failed"
        climbed = ladder.climb(node, why=f"{rung} {how}: {story.problem}", **common)
        if climbed is not None:
            yield climbed
    elif story.stage in (Stage.RUNG_FAILED, Stage.ESCALATION_FAILED):
        step = {"ResetGpus": "GPU reset", "RebootNodes": "reboot"}.get(p.trigger_type, "escalation")
        how = f"was held ({p.held_by})" if p.held_by else "failed"
        yield Notify.decide(
            window=f"{p.trigger_id}/{story.stage}",
            reason=story.problem or how,
            title=f"Node {node.node_id} stays drained: {step} {how}",
            text=f"Drained because {story.reason}. The {step} {how}: {story.problem}. The "
            "remediation ladder waits for a person: release the node, or repair it.",
            incident=node_thread(node.cluster, node.node_id),
            nodes=(node.node_id,),
            **common,
        )
