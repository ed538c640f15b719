"""The quarantine story moves on what the action workers report for a node:

- drain succeeded → `RunBenchmark` on the node (never before: no benchmark on a node in service),
  or, where a remediation ladder is configured for the node (`ladders`), the ladder's first
  step for the story's fault class (`streams.rules.ladder`, docs/remediation.md);
- drain refused or failed → tell people the node was *not* drained, with the worker's words;
- benchmark or release failed → tell people the node stays drained, and why (on a ladder, a
  benchmark that gave no verdict is a failed validation: the ladder climbs on).

Once per trigger: the windows derive from the episode or the failed trigger's id, so redelivered
results and replay decide the same ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import Field

from schemas.events import Notify, RunBenchmark, Trigger
from schemas.events.incidents import node_thread
from streams.rules import ladder
from streams.rules.ladder import LadderConfig
from streams.rules.registry import RuleConfig, rule
from streams.state.internal import NodeActionReported
from streams.state.node import Node
from streams.state.story import Stage

NAME = "quarantine_story"

_FAILED = {
    Stage.DRAIN_FAILED: (
        "Node {node} not quarantined: drain {how}",
        "Asked because {reason}. The drain {how}: {problem}. The node stays in service, marked "
        "suspect; no benchmark runs on it.",
    ),
    Stage.BENCHMARK_FAILED: (
        "Node {node} stays quarantined: benchmark failed",
        "Drained because {reason}. The benchmark gave no verdict: {problem}. The node stays "
        "drained until someone releases it.",
    ),
    Stage.RELEASE_FAILED: (
        "Node {node} stays quarantined: release failed",
        "The benchmark passed, but returning the node to service failed: {problem}. It stays "
        "drained.",
    ),
}


_FAILED_BY = {
    "QuarantineNodes": Stage.DRAIN_FAILED,
    "RunBenchmark": Stage.BENCHMARK_FAILED,
    "ReleaseNodes": Stage.RELEASE_FAILED,
}


class QuarantineStoryConfig(RuleConfig):
    ladders: list[LadderConfig] = Field(
        default_factory=list,
        description="Remediation ladders, each for a group of nodes (the first that matches): "
        "a drained node climbs its ladder (reset, reboot, validate, escalate) instead of "
        "waiting for people after one benchmark. Empty: no ladder anywhere.",
    )


@rule(NAME, on=(NodeActionReported,), config=QuarantineStoryConfig)
def quarantine_story(
    node: Node, event: NodeActionReported, config: QuarantineStoryConfig
) -> Iterator[Trigger]:
    story, p = node.story, event.payload
    if story is None or p.trigger_id not in story.triggers:
        return  # not this story's
    common: dict[str, Any] = {
        "cause": event,
        "source": f"rule/{NAME}",
        "rule": NAME,
        "severity": config.severity,
        "nodes": (node.node_id,),
        "caused_by": (p.cause,),
    }
    if story.stage is Stage.DRAINED and p.trigger_type == "QuarantineNodes" and p.succeeded:
        first = ladder.first_step(node, config.ladders, **_step(common))
        yield first or RunBenchmark.decide(
            window=f"{node.episode(event.occurred_at)}/benchmark",
            reason=f"drained because {story.reason}",
            **common,
        )
        return
    if p.succeeded or _FAILED_BY.get(p.trigger_type) is not story.stage:
        return
    problem = story.problem or "no reason given"
    if story.stage is Stage.BENCHMARK_FAILED and not p.held_by:
        climbed = ladder.climb(
            node, why=f"the validation gave no verdict: {problem}", **_step(common)
        )
        if climbed is not None:
            yield climbed
            return
    how = "was held" if p.held_by else "was refused" if p.refused else "failed"
    title, text = _FAILED[story.stage]
    words = {"node": node.node_id, "reason": story.reason, "problem": problem, "how": how}
    yield Notify.decide(
        window=f"{p.trigger_id}/{story.stage}",
        reason=problem,
        title=title.format(**words),
        text=text.format(**words),
        incident=node_thread(node.cluster, node.node_id),
        **common,
    )


def _step(common: dict[str, Any]) -> dict[str, Any]:
    """A ladder's step names its node itself."""
    return {k: v for k, v in common.items() if k != "nodes"}
