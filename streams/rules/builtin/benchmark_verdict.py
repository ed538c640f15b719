"""A quarantined node's benchmark: pass → `ReleaseNodes`; fail → it stays quarantined, and
people are told. Once per quarantine episode.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from schemas.events import BenchmarkCompleted, Notify, ReleaseNodes, Trigger
from streams.rules.registry import RuleConfig, rule
from streams.state.node import Node

NAME = "benchmark_verdict"


@rule(NAME, on=(BenchmarkCompleted,), config=RuleConfig)
def benchmark_verdict(
    node: Node, event: BenchmarkCompleted, config: RuleConfig
) -> Iterator[Trigger]:
    p = event.payload
    if not node.quarantined:
        return
    common: dict[str, Any] = {
        "cause": event,
        "source": f"rule/{NAME}",
        "rule": NAME,
        "severity": config.severity,
    }
    if p.verdict == "pass":
        yield ReleaseNodes.decide(
            window=f"{node.episode}/release",
            reason="benchmark passed",
            nodes=(node.node_id,),
            **common,
        )
        return
    why = "; ".join(p.reasons) or p.verdict
    yield Notify.decide(
        window=f"{node.episode}/benchmark-{p.verdict}",
        reason=f"benchmark {p.verdict}: {why}",
        title=f"Node {node.node_id} stays quarantined",
        text=f"Benchmark verdict {p.verdict}: {why}",
        incident=f"quarantine/{node.node_id}/{node.episode}",
        nodes=(node.node_id,),
        **common,
    )
