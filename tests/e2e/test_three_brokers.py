"""The quarantine story on a cluster of three brokers (`tests/support/kafka_cluster.py`), every
topic with three replicas and `min.insync.replicas` 2, through the real workers; the broker that
leads most of the partitions the story uses is killed with SIGKILL once the first decision is
made. Nothing is lost (every event the simulator emitted lands in ClickHouse once), no decision
is lost or made twice, no action is carried out twice (results and the ledger), and every worker
still runs: what `acks=all` and two replicas in sync promise, shown on a run of Centrality.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiokafka import TopicPartition

from actions.ledger import LedgerEntry
from centrality.pipeline import Pipeline
from collectors.simulate.config import SimConfig
from collectors.simulate.model import ClusterModel
from schemas.events import QuarantineNodes, Trigger
from schemas.placement import partition_for
from schemas.runtime.admin import ensure_topics, inspect_topics
from schemas.runtime.settings import KafkaSettings
from schemas.topics import CATALOG, TopicSettings, partition_count, topic_name
from streams.faust.topics import changelogs, internal_topics
from streams.history.client import connect
from streams.history.settings import ClickHouseSettings
from streams.settings import StreamsSettings
from tests.e2e.test_quarantine_story import of, wait_for_releases
from tests.kafka_helpers import read_events, read_messages
from tests.support.kafka_cluster import KafkaCluster

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

CLI = str(Path(sys.executable).with_name("centrality"))
# Seed 9's two fatal XIDs come 56 and 80 s into the simulation (5.6 and 8 s at 10x): the broker
# dies while their stories run and while the simulator still emits, and 330 s of simulated time
# end before either node's next XID (every 300 s), so each node has one story.
NODES, XID_NODES, SEED, SPEED, SIMULATED_S = 20, 2, 9, 10.0, 330.0
FAMILIES = ("tables", "logs", "triggers", "deadletter")
LAYOUT = TopicSettings(
    **{f"{family}_replication_factor": 3 for family in FAMILIES},
    **{f"{family}_min_insync_replicas": 2 for family in FAMILIES},
)
STORY = ("QuarantineNodes", "RunBenchmark", "ReleaseNodes")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[KafkaCluster]:
    kafka = KafkaCluster(tmp_path / "kafka")
    kafka.start()
    try:
        yield kafka
    finally:
        kafka.stop()


def partitions_in_use(kafka: KafkaSettings, app_id: str, nodes: list[str]) -> list[TopicPartition]:
    """Where the story's nodes are keyed: their events, decisions, results and table state."""
    counts = {
        topic_name(n, kafka): partition_count(n) for n in ("nodes", "gpu", "triggers", "actions")
    }
    counts[f"{app_id}-nodes-changelog"] = LAYOUT.tables_partitions
    return [
        TopicPartition(topic, partition_for(node.encode(), partitions))
        for topic, partitions in counts.items()
        for node in nodes
    ]


def wait_for_first_decision(kafka: KafkaSettings, pipeline: Pipeline, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not any(
        isinstance(e, QuarantineNodes) for e in asyncio.run(read_events(kafka, "triggers"))
    ):
        pipeline.check()
        assert time.monotonic() < deadline, "no decision"
        time.sleep(0.3)


def stored(clickhouse: ClickHouseSettings) -> dict[str, tuple[int, int]]:
    with connect(clickhouse) as client:
        rows = client.query(
            "SELECT type, count(), uniqExact(event_id) FROM events FINAL GROUP BY type"
        ).result_rows
    return {t: (int(n), int(d)) for t, n, d in rows}


def test_a_broker_killed_mid_story_loses_and_repeats_nothing(
    cluster: KafkaCluster,
    clickhouse_settings: ClickHouseSettings,
    worker_env: dict[str, str],
    unique: str,
    tmp_path: Path,
) -> None:
    kafka = cluster.settings(topic_prefix=f"k{unique}.")
    asyncio.run(ensure_topics(kafka, topics=LAYOUT))
    app_id = worker_env["CENTRALITY_STREAMS_APP_ID"]
    env = {
        **worker_env,
        "CENTRALITY_KAFKA_BOOTSTRAP": cluster.bootstrap,
        "CENTRALITY_KAFKA_TOPIC_PREFIX": kafka.topic_prefix,
        "CENTRALITY_EMITTER_SPOOL_DIR": str(tmp_path / "worker-spool"),
        **{
            f"CENTRALITY_TOPICS_{family.upper()}_{what.upper()}": str(value)
            for family in FAMILIES
            for what, value in (("replication_factor", 3), ("min_insync_replicas", 2))
        },
    }
    nodes = ClusterModel(
        SimConfig(nodes=NODES, xid_nodes=XID_NODES, seed=SEED), datetime.now(UTC)
    ).xid_nodes
    fleet = [
        "--nodes", str(NODES), "--xid-nodes", str(XID_NODES), "--seed", str(SEED),
        "--speed", str(SPEED), "--duration-s", str(SIMULATED_S), "--json",
    ]  # fmt: skip
    with Pipeline(env, tmp_path / "logs") as pipeline:
        simulator = subprocess.Popen(
            [CLI, "simulate", *fleet],
            env={**os.environ, **env, "CENTRALITY_EMITTER_SPOOL_DIR": str(tmp_path / "spool")},
            stdout=subprocess.PIPE,
        )
        try:
            wait_for_first_decision(kafka, pipeline, 180.0)
            in_use = partitions_in_use(kafka, app_id, nodes)
            leaders = asyncio.run(cluster.leaders({tp.topic for tp in in_use}))
            victim = Counter(leaders[tp] for tp in in_use).most_common(1)[0][0]
            cluster.kill(victim)
            emitted = json.loads(simulator.communicate(timeout=SIMULATED_S / SPEED + 120)[0])
        finally:
            simulator.kill()
        by_node = wait_for_releases(clickhouse_settings, nodes, pipeline, 240.0)

        def all_stored() -> bool:
            now = stored(clickhouse_settings)
            return all(now.get(t, (0, 0))[1] >= n for t, n in emitted["by_type"].items())

        deadline = time.monotonic() + 120
        while not all_stored():
            pipeline.check()
            assert time.monotonic() < deadline, (stored(clickhouse_settings), emitted["by_type"])
            time.sleep(1.0)
        pipeline.check()  # every worker still runs, on two brokers
        assert cluster.alive() == sorted(set(cluster.nodes) - {victim})
        triggers = asyncio.run(read_events(kafka, "triggers"))
        records = asyncio.run(read_messages(kafka, "action-ledger"))
        ledger = [LedgerEntry.from_bytes(raw) for raw in records if raw]

    # Nothing lost: every event emitted, once.
    rows = stored(clickhouse_settings)
    for type_, count in emitted["by_type"].items():
        assert rows[type_] == (count, count), (type_, rows[type_], count)

    # Each decision made once (one id; a send retried across the leader's move may put the same
    # id twice on the topic, which is one decision), and carried out once.
    unique_triggers = {e.event_id: e for e in triggers if isinstance(e, Trigger)}.values()
    decided = Counter((t.type, t.subject) for t in unique_triggers)
    # An entry sent again across the leader's move is the same entry (same time), not a start.
    started = {(e.trigger_id, e.recorded_at) for e in ledger if e.outcome == "started"}
    starts = Counter(str(trigger_id) for trigger_id, _ in started)
    for node, history in by_node.items():
        for kind in STORY:
            [decision] = of(history, kind)
            assert decided[(kind, node)] == 1, (kind, node, decided)
            [_] = of(history, "ActionStarted", decision["id"])
            [_] = of(history, "ActionSucceeded", decision["id"])
            assert starts[decision["id"]] == 1, (kind, node)  # the ledger: started once
        assert not of(history, "ActionFailed")

    # Every topic of the story had three replicas and two in sync, the streams worker's too.
    streams = StreamsSettings(app_id=app_id)
    assert asyncio.run(inspect_topics(kafka, CATALOG, LAYOUT))[1].drift == {}
    internal = kafka.model_copy(update={"topic_prefix": ""})
    missing, report = asyncio.run(inspect_topics(internal, internal_topics(streams), LAYOUT))
    assert not missing and report.drift == {}, (missing, report.drift)
    assert set(changelogs(streams)) <= set(report.unchanged)
