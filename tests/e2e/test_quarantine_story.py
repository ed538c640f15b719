"""`centrality simulate --nodes 200 --xid-nodes 5` through the real workers, with no settings:
every node with fatal XIDs is drained, then (and only then) benchmarked, then released, and
Slack is told exactly that. The fleet the breaker counts is the one seen heartbeating."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import hostlist
import pytest

from centrality.pipeline import Pipeline
from centrality.slack_fake import SlackFake
from collectors.simulate.config import SimConfig
from collectors.simulate.model import ClusterModel
from schemas.runtime.fleet import read_incidents
from schemas.runtime.settings import KafkaSettings
from streams.history.query import HistoryRow, rows_for
from streams.history.settings import ClickHouseSettings

pytestmark = pytest.mark.e2e

# The fleet size is a knob: `CENTRALITY_E2E_SIM_NODES=10000` is issue 13's 10,000-node run.
NODES, XID_NODES, SEED = int(os.environ.get("CENTRALITY_E2E_SIM_NODES", "200")), 5, 3


@pytest.fixture
def slack() -> Iterator[SlackFake]:
    with SlackFake() as stub:
        yield stub


def simulate(env: dict[str, str]) -> None:
    cli = Path(sys.executable).with_name("centrality")
    args = ["--nodes", str(NODES), "--xid-nodes", str(XID_NODES), "--seed", str(SEED)]
    subprocess.run(
        [str(cli), "simulate", *args, "--duration-s", "600", "--json"],
        env={**os.environ, **env},
        check=True,
        timeout=300,
    )


def story(row: HistoryRow) -> dict[str, Any]:
    return {"type": row.type, "id": row.event_id, "at": row.occurred_at, **json.loads(row.payload)}


def of(rows: list[dict[str, Any]], kind: str, trigger: str | None = None) -> list[dict[str, Any]]:
    """Rows of one type, optionally only those answering one trigger id."""
    return [r for r in rows if r["type"] == kind and trigger in (None, r.get("trigger_id"))]


def wait_for_releases(
    settings: ClickHouseSettings, nodes: list[str], pipeline: Pipeline, timeout_s: float
) -> dict[str, list[dict[str, Any]]]:
    """Poll history until every node's release succeeded; each node's rows, in time order."""
    deadline = time.monotonic() + timeout_s
    while True:
        by_node: dict[str, list[dict[str, Any]]] = {n: [] for n in nodes}
        for row in rows_for(settings, nodes):
            by_node[row.subject].append(story(row))
        released = {
            n
            for n, rows in by_node.items()
            if any(
                r["type"] == "ActionSucceeded" and r["trigger_type"] == "ReleaseNodes" for r in rows
            )
        }
        if released == set(nodes):
            return by_node
        pipeline.check()
        if time.monotonic() > deadline:
            seen = {n: sorted({r["type"] for r in rows}) for n, rows in by_node.items()}
            raise TimeoutError(f"not released: {sorted(set(nodes) - released)}; saw {seen}")
        time.sleep(1.0)


def test_fatal_xids_end_drained_benchmarked_and_released_with_no_settings(
    kafka_settings: KafkaSettings,
    clickhouse_settings: ClickHouseSettings,
    worker_env: dict[str, str],
    slack: SlackFake,
    tmp_path: Path,
) -> None:
    config = SimConfig(nodes=NODES, xid_nodes=XID_NODES, seed=SEED)
    nodes = ClusterModel(config, datetime.now(UTC)).xid_nodes
    assert len(nodes) == XID_NODES
    env = {
        **worker_env,
        "CENTRALITY_SLACK_TOKEN": "xoxb-e2e",
        "CENTRALITY_SLACK_BASE_URL": slack.base_url,
    }
    assert not any(k.startswith("CENTRALITY_ACTIONS_FLEET") for k in env)  # nothing configured
    with Pipeline(env, tmp_path / "logs") as pipeline:
        simulate(env)
        by_node = wait_for_releases(clickhouse_settings, nodes, pipeline, 240.0)
        slack.wait_quiet(3.0, 120.0, pipeline.check)  # it keeps Slack's pace: a message a second

    for node, rows in by_node.items():
        [drain, *_] = of(rows, "QuarantineNodes")
        assert drain["rule"] == "fatal_xid" and drain["nodes"] == [node]
        [drained] = of(rows, "ActionSucceeded", drain["id"])
        assert drained["nodes"] == [node] and drained["detail"]["drain"]["drained"] == [node]
        assert not of(rows, "ActionFailed")  # nothing refused: the breaker saw the fleet
        # The benchmark was decided on the drain's outcome, not beside the decision.
        [bench, *_] = of(rows, "RunBenchmark")
        assert bench["rule"] == "quarantine_story" and bench["caused_by"] == [drained["id"]]
        assert bench["at"] == drained["at"]
        [verdict] = of(rows, "BenchmarkCompleted", bench["id"])
        assert verdict["verdict"] == "pass" and len(verdict["gpus"]) == 8
        [release, *_] = of(rows, "ReleaseNodes")
        assert release["rule"] == "benchmark_verdict" and release["caused_by"] == [verdict["id"]]
        [released] = of(rows, "ActionSucceeded", release["id"])
        assert released["detail"]["resume"]["resumed"] == [node]

    # What Slack was told: the faults as incidents (fatal XIDs at once are one), each a thread
    # whose parent was updated in place to resolved, with every node back in service, and
    # nothing else: no message per node and step.
    threads = [messages for _, messages in slack.threads()]
    told = " ".join(f"{m.text} {m.blocks}" for thread in threads for m in thread)
    assert threads and all(t[0].text.startswith("Resolved: ") for t in threads), told
    assert all(t[0].edits >= 1 for t in threads)  # updated in place as the story moved
    assert all(t[-1].text.startswith("Resolved: ") for t in threads)  # the resolution reply
    incidents = asyncio.run(read_incidents(kafka_settings)).incidents
    members = {i: set(hostlist.expand_hostlist(e.payload.nodes)) for i, e in incidents.items()}
    # Each node is in an incident (one per fault: a node whose XID came again after its release
    # is in a second), every incident resolved with its nodes back in service.
    assert all(any(node in m for m in members.values()) for node in nodes), members
    assert {e.payload.state for e in incidents.values()} == {"resolved"}
    assert {s for e in incidents.values() for s in e.payload.states} == {"in_service"}
    for incident in incidents:  # each incident told in one thread
        assert sum(f"incident `{incident}`" in str(t[0].blocks) for t in threads) == 1, told
    assert len(threads) == len(incidents)
    assert len(slack.posts) <= 2 * len(threads)  # a parent and its resolution, per incident
    assert "stays quarantined" not in told and "not drained" not in told
