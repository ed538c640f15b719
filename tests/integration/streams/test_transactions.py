"""A foreign transactional producer on the real worker: librdkafka with a `transactional.id`, as
Flink's and Kafka Streams' exactly-once writers produce. What it aborts never happened; what it
commits is decided on, and the commit marker it leaves after its records keeps no tick from
judging time (by offsets alone the worker looked one record behind for ever, and judged every
tick at that record's time: a node gone silent was never called lost). While a transaction is
open, the records after it wait unread, and no node whose heartbeats wait there is silent."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from collectors.events import Stamp
from schemas.codec import encode
from schemas.envelope import Event
from schemas.events import GpuXidObserved, NodeHeartbeat
from schemas.events.gpus import GpuXidObservedPayload
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name
from tests.integration.streams.foreign import committed_up_to_end
from tests.integration.streams.worker import (
    heartbeat,
    heartbeating,
    ticking_worker,
    triggers_sent,
)
from tests.support import foreign
from tests.support.placed import on_partition_of

LIMIT_S = 3.0  # heartbeat_lost's limit in this test
STAMP = Stamp(source="it/flink", cluster="it")


OPEN_S = 3 * LIMIT_S  # how long the transaction stays open
BEAT_S = 0.5


def beat(node: str) -> NodeHeartbeat:
    return heartbeat(STAMP, node, BEAT_S)


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
    # On the committed node's partition, so its transaction ends that partition's log.
    aborted = on_partition_of(committed, f"aborted-{unique}")
    steady = on_partition_of(committed, f"steady-{unique}")
    in_transaction = on_partition_of(committed, f"open-{unique}")
    foreign.produce_transactions(
        kafka_settings,
        f"it-{unique}",
        [
            (False, [message(beat(aborted)), message(fatal_xid(aborted))]),
            (True, [message(beat(committed))]),
        ],
    )
    worker = ticking_worker(worker_env, tmp_path / "run", LIMIT_S)
    worker.start()
    try:
        seen = triggers_sent(
            kafka_settings,
            lambda ts: any(committed in nodes_named(t) for t in ts),
            60,
            worker.check,
        )
        lost = [t for t in seen if committed in nodes_named(t)]
        assert lost[0].type == "Notify" and lost[0].payload.rule == "heartbeat_lost", seen
        assert not [t for t in seen if aborted in nodes_named(t)], "an aborted record decided"
        # Committed past the commit marker that ends the partition: no lag of one for good.
        group, nodes = worker_env["CENTRALITY_STREAMS_APP_ID"], topic_name("nodes", kafka_settings)
        asyncio.run(committed_up_to_end(kafka_settings.bootstrap, group, [nodes], 20))

        with heartbeating(kafka_settings, STAMP, steady, BEAT_S):
            time.sleep(2 * BEAT_S)  # folded, and heartbeating
            producer = foreign.transactional(kafka_settings, f"it-open-{unique}")
            producer.begin_transaction()
            foreign.put(producer, kafka_settings, [message(beat(in_transaction))])
            time.sleep(OPEN_S)  # the steady node's heartbeats pile up behind it
            producer.commit_transaction(30)
            ended = time.monotonic()
            seen = triggers_sent(
                kafka_settings,
                lambda ts: (
                    any(in_transaction in nodes_named(t) for t in ts)
                    and time.monotonic() - ended > LIMIT_S
                ),
                60,
                worker.check,
            )
    finally:
        worker.stop()
    # Its heartbeat was read once committed, and it has been silent since.
    [first, *_] = [t for t in seen if in_transaction in nodes_named(t)]
    assert first.type == "Notify" and first.payload.rule == "heartbeat_lost", seen
    assert not [t for t in seen if steady in nodes_named(t)], "unread heartbeats taken for silence"
