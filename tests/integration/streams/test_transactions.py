"""A foreign transactional producer on the real worker: librdkafka with a `transactional.id`, as
Flink's and Kafka Streams' exactly-once writers produce. What it aborts never happened; what it
commits is decided on, and the commit marker it leaves after its records keeps no tick from
judging time (by offsets alone the worker looked one record behind for ever, and judged every
tick at that record's time: a node gone silent was never called lost)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from collectors.events import Stamp
from schemas.codec import encode
from schemas.envelope import Event
from schemas.events import GpuXidObserved, NodeHeartbeat
from schemas.events.gpus import GpuXidObservedPayload
from schemas.events.nodes import NodeHeartbeatPayload
from schemas.placement import partition_for
from schemas.settings import KafkaSettings
from schemas.topics import partition_count
from tests.integration.streams.worker import StreamsWorker, triggers_sent
from tests.support.foreign import produce_transactions

LIMIT_S = 3.0  # heartbeat_lost's limit in this test
STAMP = Stamp(source="it/flink", cluster="it")


def beat(node: str) -> NodeHeartbeat:
    payload = NodeHeartbeatPayload(agent_version="it", gpus=8, interval_s=1.0)
    return STAMP.make(NodeHeartbeat, node, payload)


def fatal_xid(node: str) -> GpuXidObserved:
    return STAMP.make(GpuXidObserved, node, GpuXidObservedPayload(gpu=0, xid=79))


def message(event: Event) -> tuple[str, bytes, bytes]:
    return (event.topic, event.subject.encode(), encode(event))


def nodes_named(trigger: Any) -> set[str]:
    payload = trigger.payload.model_dump()
    return {*payload.get("nodes", ()), *([payload["node"]] if payload.get("node") else [])}


def test_aborted_records_never_happened_and_markers_stop_no_tick(
    kafka_settings: KafkaSettings, worker_env: dict[str, str], unique: str, tmp_path: Path
) -> None:
    committed = f"committed-{unique}"
    partitions = partition_count("nodes")
    mine = partition_for(committed.encode(), partitions)
    # On the committed node's partition, so its transaction ends that partition's log.
    aborted = next(
        node
        for node in (f"aborted-{unique}-{i}" for i in range(1000))
        if partition_for(node.encode(), partitions) == mine
    )
    produce_transactions(
        kafka_settings,
        f"it-{unique}",
        [
            (False, [message(beat(aborted)), message(fatal_xid(aborted))]),
            (True, [message(beat(committed))]),
        ],
    )
    worker = StreamsWorker(
        {
            **worker_env,
            "CENTRALITY_STREAMS_RULE_CONFIG": orjson.dumps(
                {"heartbeat_lost": {"limit_s": LIMIT_S}}
            ).decode(),
        },
        tmp_path / "run",
    )
    worker.env["CENTRALITY_STREAMS_TICK_INTERVAL_S"] = "1"
    worker.start()
    try:
        seen = triggers_sent(
            kafka_settings,
            lambda ts: any(committed in nodes_named(t) for t in ts),
            60,
            worker.check,
        )
    finally:
        worker.stop()
    lost = [t for t in seen if committed in nodes_named(t)]
    assert lost and lost[0].type == "Notify" and lost[0].payload.rule == "heartbeat_lost", seen
    assert not [t for t in seen if aborted in nodes_named(t)], "an aborted record was decided on"
