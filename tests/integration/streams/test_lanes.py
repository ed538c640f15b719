"""On the real worker, a fatal XID is folded before the heartbeats and passed health checks
queued ahead of it on its partition, and those are all folded after it: nothing is lost (and
test_ticks: no tick meanwhile judges the silence of a node whose heartbeat waits).

A backlog is written before the worker starts, so its first fetch hands over heartbeats and the
XID together, as a burst does when 10,000 nodes heartbeat at once: in partition order, the XID's
node would be folded, and its changelog record written, after every record before it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from collectors.events import Stamp
from schemas.events import GpuXidObserved, NodeHealthChecked
from schemas.events.gpus import GpuXidObservedPayload
from schemas.events.nodes import HealthStatus, NodeHealthCheckedPayload
from schemas.placement import partition_for
from schemas.runtime.settings import KafkaSettings
from schemas.topics import partition_count
from tests.integration.streams.worker import StreamsWorker, emit, heartbeat, triggers_sent
from tests.support.placed import crowd_on_partition_of

AHEAD = 1_500  # heartbeats and passed checks of other nodes on the XID's partition, before it
STAMP = Stamp(source="it/agent", cluster="it")


async def changelog(
    settings: KafkaSettings, topic: str, partition: int, want: set[str]
) -> list[Any]:
    """A changelog partition's records in offset order, up to the first that leaves no key of
    `want` unseen (the sick node writes more than one state meanwhile: its incident's, too)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        records: list[Any] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        unseen = set(want)
        while unseen and loop.time() < deadline:
            for record in (await consumer.getmany(tp, timeout_ms=500)).get(tp, []):
                if unseen:
                    records.append(record)
                    unseen.discard(record.key.decode())
        return records
    finally:
        await consumer.stop()


def test_a_fatal_xid_is_folded_before_the_routine_records_queued_ahead_of_it(
    kafka_settings: KafkaSettings, worker_env: dict[str, str], unique: str, tmp_path: Path
) -> None:
    sick = f"sick-{unique}"
    mine = partition_for(sick.encode(), partition_count("nodes"))
    crowd = crowd_on_partition_of(sick, f"crowd-{unique}", AHEAD)
    xid = STAMP.make(GpuXidObserved, sick, GpuXidObservedPayload(gpu=0, xid=79))
    passed = NodeHealthCheckedPayload(check="it", status=HealthStatus.OK)
    routine = [
        heartbeat(STAMP, n, 30.0) if i % 2 else STAMP.make(NodeHealthChecked, n, passed)
        for i, n in enumerate(crowd)
    ]
    asyncio.run(emit(kafka_settings, routine))
    asyncio.run(emit(kafka_settings, [xid]))
    worker = StreamsWorker(worker_env, tmp_path / "run")
    worker.start()
    try:
        seen = triggers_sent(
            kafka_settings,
            lambda ts: any(t.type == "QuarantineNodes" for t in ts),
            90,
            worker.check,
        )
        assert [list(t.payload.nodes) for t in seen if t.type == "QuarantineNodes"] == [[sick]]
        topic = f"{worker_env['CENTRALITY_STREAMS_APP_ID']}-nodes-changelog"
        # Every node's first state: the crowd's records and the XID, then the quarantine
        # story's records of the sick node.
        records = asyncio.run(changelog(kafka_settings, topic, mine, {*crowd, sick}))
    finally:
        worker.stop()
    keys = [r.key.decode() for r in records]
    assert set(crowd) <= set(keys), "a record queued behind the XID was never folded"
    first_sick = keys.index(sick)
    after = {k for k in keys[first_sick:] if k != sick}
    # In partition order the XID would come last of these: it overtook those still queued.
    assert len(after) >= AHEAD // 2, f"the XID was folded after {first_sick} of {AHEAD} records"
