"""The real benchmark runner started on each node (a process per node) reaches Slack (an
operator's benchmark: a rule's is told by its nodes' incident).

(Split from tests/unit/actions/test_dispatch.py: the unit layer starts no process.)"""

from __future__ import annotations

import sys

from centrality.slack_fake import SlackFake
from schemas.events import (
    BenchmarkCompleted,
)
from tests.support.triggers import benchmark
from tests.unit.actions.test_dispatch import Rig, drained, json_text, operators


async def test_real_runner_on_each_node_reaches_slack(slack: SlackFake) -> None:
    rig = Rig(
        slack,
        benchmark_command=[sys.executable, "-m", "actions.benchmark.runner"],
        quarantine_max_share=0.5,
    )
    rig.adapter.execute_runs = True
    await drained(rig, "gpu-a", "gpu-b")
    await rig.handle(operators(benchmark(("gpu-a", "gpu-b"))))
    results = {e.subject: e.payload.verdict for e in rig.of(BenchmarkCompleted)}
    assert results == {"gpu-a": "no-gpu", "gpu-b": "no-gpu"}  # this machine has no GPU
    table = json_text(slack.posts[-1])
    assert "gpu-a" in table and "gpu-b" in table and "no-gpu" in table
