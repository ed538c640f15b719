"""What people do in Slurm by hand wins, on the real stack and a real slurmctld: the workers, the
Slurm adapter and `centrality watch slurm` as processes.

- a node Centrality drained for a fatal XID is resumed by hand with `scontrol` once its
  benchmark is decided, before the benchmark's window opens (inside it the node is not drained:
  Slurm refuses a resume): its story stops (no release, no second drain), people are told once,
  the window leaves the node in service, and the benchmark's verdict changes nothing;
- a node someone drained for a reason of their own is theirs: a fatal XID on it decides no
  quarantine, and once they resume it, rules decide about it again.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from centrality.fleet import read_fleet
from centrality.pipeline import Pipeline
from centrality.slack_fake import SlackFake
from schemas.envelope import utcnow
from schemas.events import GpuXidObserved
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from streams.history.query import rows_for
from streams.history.settings import ClickHouseSettings
from tests.support.slurm import SlurmCluster
from tests.support.until import until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

BENCH_S = 20  # the benchmark takes this long: time for a person to act meanwhile


@pytest.fixture
def slack() -> Iterator[SlackFake]:
    with SlackFake() as stub:
        yield stub


def xid(cluster: str, node: str) -> GpuXidObserved:
    return GpuXidObserved(
        source=f"agent@{node}",
        cluster=cluster,
        subject=node,
        occurred_at=utcnow(),
        payload={"gpu": 0, "xid": 79},
    )


async def emit(kafka: KafkaSettings, event: GpuXidObserved) -> None:
    async with Emitter(kafka) as emitter:
        await emitter.emit(event)


def status(kafka: KafkaSettings, node: str) -> dict[str, Any] | None:
    found = asyncio.run(read_fleet(kafka)).nodes.get(node)
    return None if found is None else found.payload.model_dump(mode="json")


def gated_scontrol(bin_dir: Path, gate: Path) -> None:
    """An `scontrol` first on the workers' PATH that opens a window (creates a reservation) only
    once `gate` exists: the person acts before the window, whatever the workers' speed."""
    real = shutil.which("scontrol")
    assert real is not None
    bin_dir.mkdir()
    wrapper = bin_dir / "scontrol"
    wrapper.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = create ] && [ "$2" = reservation ]; then\n'
        f"  i=0; while [ ! -e {gate} ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n"
        "fi\n"
        f'exec {real} "$@"\n'
    )
    wrapper.chmod(0o755)


def history(clickhouse: ClickHouseSettings, node: str) -> list[tuple[str, dict[str, Any]]]:
    return [(r.type, json.loads(r.payload)) for r in rows_for(clickhouse, [node])]


def test_what_people_do_in_slurm_wins(
    kafka_settings: KafkaSettings,
    clickhouse_settings: ClickHouseSettings,
    worker_env: dict[str, str],
    slurm_cluster: SlurmCluster,
    slack: SlackFake,
    tmp_path: Path,
) -> None:
    cluster = slurm_cluster.name
    slow_bench = f'sleep {BENCH_S}; exec {sys.executable} -m actions.benchmark.runner --json "$@"'
    gate = tmp_path / "window-may-open"
    gated_scontrol(tmp_path / "bin", gate)
    env = {
        **worker_env,
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        **slurm_cluster.adapter_env(),
        "CENTRALITY_ACTIONS_ADAPTER": "slurm",
        "CENTRALITY_ACTIONS_FLEET_SIZE": json.dumps({cluster: 3}),
        "CENTRALITY_ACTIONS_QUARANTINE_MAX_SHARE": "0.7",
        "CENTRALITY_ACTIONS_BENCHMARK_COMMAND": json.dumps(["sh", "-c", slow_bench, "bench"]),
        "CENTRALITY_SLURM_WATCH_CLUSTER": cluster,
        "CENTRALITY_SLURM_WATCH_CONF": str(slurm_cluster.conf),
        "CENTRALITY_SLURM_WATCH_POLL_S": "0.5",
        "CENTRALITY_SLURM_WATCH_STATE_FILE": str(tmp_path / "watch-state.json"),
        "CENTRALITY_SLACK_TOKEN": "xoxb-e2e",
        "CENTRALITY_SLACK_BASE_URL": slack.base_url,
    }
    workers = ("streams", "actions", "sink", "watch slurm")
    try:
        with Pipeline(env, tmp_path / "logs", workers) as pipeline:
            # Resumed by hand mid-story.
            asyncio.run(emit(kafka_settings, xid(cluster, "node3")))
            until(
                "benchmarking node3",
                lambda: (status(kafka_settings, "node3") or {}).get("state") == "benchmarking",
                pipeline,
            )
            assert "DRAIN" in slurm_cluster.node_field("node3", "%T").upper()
            slurm_cluster.scontrol("update", "nodename=node3", "state=resume")
            gate.touch()
            back = until(
                "node3 back in service",
                lambda: (s := status(kafka_settings, "node3")) and s["state"] == "in_service" and s,
                pipeline,
                seen=lambda: (
                    status(kafka_settings, "node3"),
                    slurm_cluster.node_field("node3", "%T|%E"),
                    slurm_cluster.scontrol("show", "reservation"),
                ),
            )
            assert back["why"].startswith("resumed (out for: fatal_xid: Xid 79")
            assert back["by"] == "scheduler"  # who returned it: someone, by hand there
            until(
                "the benchmark's verdict",
                lambda: any(
                    t == "BenchmarkCompleted" for t, _ in history(clickhouse_settings, "node3")
                ),
                pipeline,
                timeout_s=BENCH_S + 60,
            )
            time.sleep(3)  # what the verdict could lead to has had time to happen
            assert status(kafka_settings, "node3")["state"] == "in_service"  # type: ignore[index]
            assert "DRAIN" not in slurm_cluster.node_field("node3", "%T").upper()  # nor the window

            # Drained by someone else: theirs.
            slurm_cluster.scontrol(
                "update", "nodename=node2", "state=drain", "reason=PSU swap, ticket 42"
            )
            until(
                "node2 drained by someone else",
                lambda: (
                    [(s := status(kafka_settings, "node2") or {}).get("state"), s.get("by")]
                    == ["quarantined", "scheduler"]  # theirs: who took it out is `by`
                ),
                pipeline,
            )
            asyncio.run(emit(kafka_settings, xid(cluster, "node2")))
            time.sleep(5)
            assert status(kafka_settings, "node2")["why"] == "PSU swap, ticket 42"  # type: ignore[index]
            slurm_cluster.scontrol("update", "nodename=node2", "state=resume")
            until(
                "node2 theirs no more",
                lambda: (status(kafka_settings, "node2") or {}).get("state") == "in_service",
                pipeline,
            )
            asyncio.run(emit(kafka_settings, xid(cluster, "node2")))
            until(
                "node2 drained by Centrality",
                lambda: (
                    "DRAIN" in slurm_cluster.node_field("node2", "%T").upper()
                    and "centrality:" in slurm_cluster.node_field("node2", "%E")
                ),
                pipeline,
            )
            slack.wait_quiet(3.0, 120.0, pipeline.check)  # Slack's pace: a message a second
    finally:  # the cluster is the session's: no node drained, no benchmark or reservation left
        slurm_cluster.tidy()

    node3 = history(clickhouse_settings, "node3")
    decided = [
        p["rule"] for t, p in node3 if t in ("QuarantineNodes", "RunBenchmark", "ReleaseNodes")
    ]
    assert decided == ["fatal_xid", "quarantine_story"]  # no release, no second drain
    # What people did by hand is told once, as a note in the node's incident thread.
    told = [p for p in slack.posts if "node3: resumed by hand" in str(p.get("blocks"))]
    assert len(told) == 1 and told[0].get("thread_ts"), told
    node2 = [p["rule"] for t, p in history(clickhouse_settings, "node2") if t == "QuarantineNodes"]
    assert node2 == ["fatal_xid"]  # only the XID after they resumed it
