"""A node's state in the one vocabulary people read (`NodeCondition`): in the status views, the
CLI, the client, incidents and Slack alike, so they cannot disagree."""

from __future__ import annotations

from datetime import datetime

from schemas.events.status import NodeCondition
from streams.state.node import Node
from streams.state.story import Stage

STAGE_CONDITION: dict[Stage, NodeCondition] = {
    Stage.DRAIN_REQUESTED: "draining",
    Stage.DRAIN_FAILED: "suspect",
    Stage.BENCHMARKING: "benchmarking",
    Stage.PASSED: "releasing",
    Stage.RELEASING: "releasing",
    Stage.RESETTING: "resetting",
    Stage.RESET: "resetting",
    Stage.REBOOT_REQUESTED: "rebooting",
    Stage.REBOOTING: "rebooting",
    Stage.REBOOTED: "rebooting",
    Stage.ESCALATING: "escalated",
    Stage.ESCALATED: "escalated",
    Stage.ESCALATION_FAILED: "escalated",
}
# Nothing more happens to a node in these without a new fault or a person: an incident whose
# members are all settled is resolved. A refused drain is settled (the story is over, the
# refusal told), and so is a held one (rules decide afresh after the silence); a node people
# quarantined (an operator, or by hand in the scheduler) is too, though its state alone does not
# say so (`settled`).
SETTLED: frozenset[NodeCondition] = frozenset(
    {"in_service", "suspect", "held", "escalated", "down"}
)


def condition(node: Node) -> NodeCondition:
    """Centrality's story first (it has the node out), then what the scheduler says someone
    else did, then silence; otherwise in service."""
    story, scheduler = node.story, node.scheduler
    if story is not None:
        if story.stage is Stage.DRAIN_FAILED and story.held_by is not None:
            return "held"  # a silence holds the decision: rules decide afresh after it
        return STAGE_CONDITION.get(story.stage, "quarantined")
    if node.out_of_service_by_scheduler and scheduler is not None:
        return "down" if scheduler.state.value == "DOWN" else "quarantined"
    if node.lost is not None:
        return "unreachable"
    return "in_service"


def held_by_people(node: Node) -> bool:
    """Quarantined by people: an operator's quarantine, or a drain by hand in the scheduler."""
    story = node.story
    if story is not None:
        return story.stage is Stage.HELD
    return node.out_of_service_by_scheduler and node.scheduler is not None


def settled(node: Node) -> bool:
    """Nothing more happens to it without a new fault or a person (see `SETTLED`)."""
    return condition(node) in SETTLED or held_by_people(node)


def condition_since(node: Node) -> datetime | None:
    """When the node's current condition began."""
    story, scheduler = node.story, node.scheduler
    if story is not None:
        return story.since
    if node.out_of_service_by_scheduler and scheduler is not None:
        return scheduler.at
    if node.lost is not None:
        return node.lost.since
    return node.story_ended_at
