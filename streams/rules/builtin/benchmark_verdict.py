"""A drained node's benchmark verdict: pass → `ReleaseNodes`; anything else → it stays
quarantined (drained), and people are told; on a remediation ladder, the ladder climbs on
instead (the next rung, or escalation to a person). Once per quarantine episode.

The verdict is judged in the node's fold (`streams.state.judge`): the runner's thresholds, the
node's GPU model's datasheet, and the median of its model's fleet; the reason says which.
The node's fold has already taken the verdict (stage `passed` or `kept`) only when the node is
drained and the benchmark is one of its story's; a verdict on a node in service does nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from schemas.events import BenchmarkCompleted, Notify, ReleaseNodes, Trigger
from schemas.events.incidents import node_thread
from streams.rules import ladder
from streams.rules.registry import RuleConfig, rule
from streams.state.node import Node
from streams.state.story import Stage

NAME = "benchmark_verdict"


@rule(NAME, on=(BenchmarkCompleted,), config=RuleConfig)
def benchmark_verdict(
    node: Node, event: BenchmarkCompleted, config: RuleConfig
) -> Iterator[Trigger]:
    story = node.story
    if story is None:
        return  # a node in service: nothing to release or keep
    common: dict[str, Any] = {
        "cause": event,
        "source": f"rule/{NAME}",
        "rule": NAME,
        "severity": config.severity,
    }
    if story.stage is Stage.PASSED:
        yield ReleaseNodes.decide(
            window=f"{node.episode(event.occurred_at)}/release",
            reason=f"benchmark passed ({story.judged})" if story.judged else "benchmark passed",
            nodes=(node.node_id,),
            **common,
        )
    elif story.stage is Stage.KEPT:
        verdict = story.verdict or event.payload.verdict  # as judged, the runner's or ours
        climbed = ladder.climb(node, why=f"benchmark {verdict}: {story.problem}", **common)
        if climbed is not None:
            yield climbed
            return
        yield Notify.decide(
            window=f"{node.episode(event.occurred_at)}/benchmark-{verdict}",
            reason=f"benchmark {verdict}: {story.problem}",
            title=f"Node {node.node_id} stays quarantined: benchmark {verdict}",
            text=f"Drained because {story.reason}. Benchmark verdict {verdict}: "
            f"{story.problem} (judged by {story.judged}). It stays drained until someone "
            "releases it.",
            incident=node_thread(node.cluster, node.node_id),
            nodes=(node.node_id,),
            **common,
        )
