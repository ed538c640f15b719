"""The remediation ladder as data, and the step a node's story takes next on it.

A ladder is chosen per fault class once a node is drained: the most severe resolution NVIDIA's
XID catalog recommends for the XIDs behind the story (`schemas.xids`), or `other` when none
was fatal (repeated failures, health checks). Its rungs are climbed in order, each an action of
its own (validate: the benchmark; reset: the GPUs; reboot: the node), a validation after every
repair; a passing validation releases the node, an exhausted ladder escalates to a person.

The plan travels with the decisions: every step's trigger carries the rungs left after it, and
the node's story keeps them (`Story.ladder`), so each later step is decided from the state
alone, live and in replay, whichever rule takes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from schemas.events import EscalateNodes, RebootNodes, ResetGpus, RunBenchmark, Trigger
from schemas.events.triggers import Rung
from schemas.groups import NODES, Match, node_selected, node_selector
from schemas.limits import SMALL_LIST
from streams.state.node import Node, XidSeen
from streams.state.story import Story

FaultClass = Literal["RESET_GPU", "REBOOT_NODE", "SERVICE_NODE", "other"]
# Most severe last: a story with several fatal XIDs climbs the ladder of the worst.
_BY_SEVERITY: tuple[FaultClass, ...] = ("RESET_GPU", "REBOOT_NODE", "SERVICE_NODE")
DEFAULT_RUNGS: dict[FaultClass, tuple[Rung, ...]] = {
    "RESET_GPU": ("reset", "reboot"),  # e.g. Xid 48, 95: reset, then reboot
    "REBOOT_NODE": ("reboot",),  # e.g. Xid 79: off the bus
    "SERVICE_NODE": (),  # e.g. Xid 54: hands-on, straight to a person
    "other": ("validate", "reboot"),  # benchmark; if it fails, reboot once and benchmark again
}
XID_LOOKBACK_S = 3600.0  # XIDs this long before a quarantine was decided count as its cause
_TRIGGER: dict[Rung, type[RunBenchmark] | type[ResetGpus] | type[RebootNodes]] = {
    "validate": RunBenchmark,
    "reset": ResetGpus,
    "reboot": RebootNodes,
}


class LadderConfig(BaseModel):
    """One ladder: the nodes it is for, and its rungs per fault class."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    nodes: str = Field(
        default="*",
        description="The nodes this ladder is for: a glob (`gpu-*`) or a hostlist "
        "(`gpu-[01-04]`); the first ladder whose nodes (and `match`) select it is the node's.",
    )
    match: Match | None = Field(
        default=None,
        description="A node group, as rule scopes select them (cluster, gpu_model, partition, "
        "feature, label: docs/rules.md); None: every node `nodes` names.",
    )
    rungs: dict[FaultClass, tuple[Rung, ...]] = Field(
        default_factory=lambda: dict(DEFAULT_RUNGS),
        description="Per fault class (RESET_GPU, REBOOT_NODE, SERVICE_NODE: the XID catalog's "
        "resolution of the story's worst fatal XID; other: no fatal XID), the rungs in order; "
        "a validation follows every reset and reboot, an empty list escalates at once. Fault "
        "classes left out keep their defaults.",
    )

    @field_validator("nodes")
    @classmethod
    def _selector(cls, value: str) -> str:
        return node_selector(value)

    @field_validator("match")
    @classmethod
    def _nodes(cls, value: Match | None) -> Match | None:
        if value is not None and NODES not in value.kinds:
            raise ValueError(f"{value.said()} selects jobs, not nodes")
        return value

    @field_validator("rungs")
    @classmethod
    def _defaults(cls, value: dict[FaultClass, tuple[Rung, ...]]) -> dict[Any, Any]:
        return {**DEFAULT_RUNGS, **value}

    def covers(self, node: Node) -> bool:
        if not node_selected(node.node_id, self.nodes):
            return False
        return self.match is None or self.match.selects(node.group_facts)


def story_xids(node: Node, story: Story) -> list[XidSeen]:
    """The XIDs behind the story: seen up to its decision, since the last story ended, within
    `XID_LOOKBACK_S` of it."""
    since = story.decided_at - timedelta(seconds=XID_LOOKBACK_S)
    if node.story_ended_at is not None:
        since = max(since, node.story_ended_at)
    return [x for x in node.xids if since < x.at <= story.decided_at]


def fault_of(xids: Sequence[XidSeen]) -> FaultClass:
    found: set[str] = {x.resolved_by.value for x in xids if x.resolved_by.fatal}
    worst = [c for c in _BY_SEVERITY if c in found]
    return worst[-1] if worst else "other"


def plan(node: Node, ladders: Sequence[LadderConfig]) -> tuple[Rung, ...] | None:
    """The ladder of a drained node's story; None when no ladder is for this node."""
    story = node.story
    ladder = next((lad for lad in ladders if lad.covers(node)), None)
    if story is None or ladder is None:
        return None
    return ladder.rungs[fault_of(story_xids(node, story))]


def first_step(node: Node, ladders: Sequence[LadderConfig], **common: Any) -> Trigger | None:
    """The ladder's first step once the node is drained; None when no ladder is for it."""
    rungs = plan(node, ladders)
    if rungs is None:
        return None
    return take(node, rungs, why=f"drained because {_reason(node)}", **common)


def climb(node: Node, *, why: str, **common: Any) -> Trigger | None:
    """The next step after a validation that did not pass or a rung that failed: the next rung,
    or escalation when none is left; None when the story is on no ladder."""
    story = node.story
    if story is None or story.ladder is None:
        return None
    return take(node, story.ladder, why=why, **common)


def validate(node: Node, *, why: str, **common: Any) -> Trigger:
    """The validation after a repair (the benchmark), the rungs left unchanged."""
    assert node.story is not None
    return _step(node, "validate", node.story.ladder or (), why=why, **common)


def take(node: Node, rungs: tuple[Rung, ...], *, why: str, **common: Any) -> Trigger:
    if not rungs:
        return escalate(node, why=why, **common)
    return _step(node, rungs[0], rungs[1:], why=why, **common)


def _step(node: Node, rung: Rung, rest: tuple[Rung, ...], *, why: str, **common: Any) -> Trigger:
    story = node.story
    assert story is not None
    step = len(story.rungs) + 1
    extra: dict[str, Any] = {}
    if rung == "reset":
        xids = story_xids(node, story)
        extra["gpus"] = tuple(sorted({x.gpu for x in xids if x.resolved_by.fatal}))
    return _TRIGGER[rung].decide(
        window=f"{node.episode(story.decided_at)}/rung-{step}-{rung}",
        reason=f"{rung} (rung {step}): {why}",
        nodes=(node.node_id,),
        ladder=rest,
        **extra,
        **common,
    )


def escalate(node: Node, *, why: str, **common: Any) -> EscalateNodes:
    story = node.story
    assert story is not None
    tried = [r.told() for r in story.rungs]
    if story.rung is not None:  # the rung given up now: why
        tried[-1] = f"{story.rung.rung}: {why}"
    xids = story_xids(node, story)
    benchmarks = [r.told() for r in story.rungs if r.rung == "validate" and r.outcome]
    return EscalateNodes.decide(
        window=f"{node.episode(story.decided_at)}/escalate",
        reason=f"ladder exhausted ({why}); drained because {story.reason}",
        nodes=(node.node_id,),
        tried=tuple(tried[-SMALL_LIST:]),
        xids=tuple(x.xid for x in xids)[-SMALL_LIST:],
        benchmarks=tuple(benchmarks[-SMALL_LIST:]),
        serials=node.facts.gpu_serials,
        **common,
    )


def _reason(node: Node) -> str:
    return node.story.reason if node.story is not None else "-"
