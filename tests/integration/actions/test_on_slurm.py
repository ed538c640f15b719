"""Issue 6 as an operator sees it: triggers through `centrality actions` onto a real Slurm
cluster, results in Kafka and Slack, and the same triggers again changing nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from actions.adapters.slurm import SlurmAdapter
from centrality.slack_fake import SlackFake
from schemas.events import (
    ActionSucceeded,
    BenchmarkCompleted,
    QuarantineNodes,
    ReleaseNodes,
    RestartJob,
    RunBenchmark,
)
from schemas.runtime.settings import KafkaSettings
from tests.factories import exited
from tests.kafka_helpers import read_events
from tests.support.action_worker import count, send, wait_for, worker
from tests.support.slurm import SlurmCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TRAIN = """#!/bin/sh
echo "resume=${CENTRALITY_RESUME_FROM:-none}"
[ -n "$CENTRALITY_RESUME_FROM" ] && echo "Training Complete" && exit 0
exit 3
"""
SUSPECTS = ("node2", "node3")


def decide(cls: type, cluster: str, window: str, **payload: object) -> object:
    cause = exited(subject=f"slurm/{cluster}/0").model_copy(update={"cluster": cluster})
    return cls.decide(
        cause=cause,
        source="test",
        rule="repeated_failures",
        window=window,  # type: ignore[attr-defined]
        reason="5 failures on node2,node3 within 1h",
        **payload,
    )


async def test_triggers_act_on_slurm_once_and_reach_slack(
    kafka_settings: KafkaSettings,
    slurm: SlurmAdapter,
    slurm_cluster: SlurmCluster,
    slack: SlackFake,
    tmp_path: Path,
) -> None:
    script = tmp_path / "train.sh"
    script.write_text(TRAIN)
    out = slurm_cluster.output_dir / "train-%j.out"
    job = slurm_cluster.sbatch("--requeue", "--open-mode=append", f"--output={out}", str(script))
    assert slurm_cluster.wait_job(job, {"FAILED", "COMPLETED"}) == "FAILED"
    cluster = slurm_cluster.name
    restart = RestartJob.decide(
        cause=exited(subject=f"slurm/{cluster}/{job}").model_copy(update={"cluster": cluster}),
        source="test", rule="restart_incomplete_exit", window="attempt-1",
        reason="exited 3 without Training Complete", checkpoint_uri="s3://ckpt/step-1200",
        attempt=1,
    )  # fmt: skip
    quarantine = decide(QuarantineNodes, cluster, "q1", nodes=SUSPECTS)
    bench = decide(RunBenchmark, cluster, "q1", nodes=SUSPECTS)
    release = decide(ReleaseNodes, cluster, "r1", nodes=SUSPECTS)
    settings = {
        "fleet_size": {cluster: 3},
        "quarantine_max_share": 0.7,
        "benchmark_command": [sys.executable, "-m", "actions.benchmark.runner", "--json"],
    }

    async with worker(kafka_settings, slurm, slack, **settings):
        await send(kafka_settings, restart, quarantine, bench)
        seen = await wait_for(
            kafka_settings,
            lambda s: all(count(s, ActionSucceeded, t) == 1 for t in (restart, quarantine, bench)),
            180,
        )
        # RestartJob: the failed job ran again, from the checkpoint.
        assert slurm_cluster.wait_job(job, {"COMPLETED"}, timeout_s=30) == "COMPLETED"
        assert "resume=s3://ckpt/step-1200" in slurm.job_logs(f"slurm/{cluster}/{job}")
        # QuarantineNodes: drained, with the trigger's reason.
        for node in SUSPECTS:
            assert "DRAIN" in slurm_cluster.node_field(node, "%T").upper()
            assert "5 failures" in slurm_cluster.node_field(node, "%E")
        assert "DRAIN" not in slurm_cluster.node_field("node1", "%T").upper()
        # RunBenchmark: ran on exactly those nodes, one result each (no GPU here: no-gpu).
        on_nodes = await read_events(kafka_settings, "nodes")
        results = [e for e in on_nodes if isinstance(e, BenchmarkCompleted)]
        assert sorted(r.subject for r in results) == sorted(SUSPECTS)
        assert {r.payload.verdict for r in results} == {"no-gpu"}

        runs_before = count(seen, ActionSucceeded, restart)
        await send(kafka_settings, restart, quarantine, bench, release)  # redelivered + one new
        seen = await wait_for(kafka_settings, lambda s: count(s, ActionSucceeded, release) == 1)

    assert count(seen, ActionSucceeded, restart) == runs_before == 1
    assert count(seen, ActionSucceeded, quarantine) == count(seen, ActionSucceeded, bench) == 1
    assert slurm_cluster.job_field(job, "Restarts") == "1"  # not requeued a second time
    for node in SUSPECTS:  # released by the one new trigger
        assert "DRAIN" not in slurm_cluster.node_field(node, "%T").upper()
    # A rule's steps of a node's story (drain, benchmark, release) are told by the nodes'
    # incident (the teller), never message by message by the worker that acted.
    texts = [str(p.get("text", "")) + str(p.get("blocks", "")) for p in slack.posts]
    assert not [t for t in texts if "no-gpu" in t or "Drained" in t]


async def test_dry_run_changes_nothing_on_slurm(
    kafka_settings: KafkaSettings,
    slurm: SlurmAdapter,
    slurm_cluster: SlurmCluster,
    slack: SlackFake,
) -> None:
    cluster = slurm_cluster.name
    quarantine = decide(QuarantineNodes, cluster, "dry", nodes=SUSPECTS)
    async with worker(kafka_settings, slurm, slack, dry_run=True, fleet_size={cluster: 3},
                      quarantine_max_share=0.7):  # fmt: skip
        await send(kafka_settings, quarantine)
        seen = await wait_for(kafka_settings, lambda s: count(s, ActionSucceeded, quarantine) == 1)
    [done] = [e for e in seen if isinstance(e, ActionSucceeded)]
    assert done.payload.dry_run
    planned = str(done.payload.detail["planned"])
    assert "drain" in planned and "node2" in planned
    for node in slurm_cluster.node_names:
        assert "DRAIN" not in slurm_cluster.node_field(node, "%T").upper()
    assert slack.posts == []
