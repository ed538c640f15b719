"""Clock ticks on the real worker: a node that falls silent is called lost, and a worker that
starts behind calls no node lost whose newer heartbeats it has not read yet.

Behind, here, as after a worker's outage in a deployment of several: its partitions' heartbeats
piled up, and so did the ticks the leader (another worker) went on sending for them every
second; the restarted worker reads both at once, the ticks long before the last heartbeats.
The backlog's health checks warn, so they queue in the fast lane and overtake the steady node's
heartbeats (streams.faust.lanes): the ticks also judge no later than a heartbeat queued behind
them."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer

from collectors.events import Stamp
from schemas.events import NodeHealthChecked, NodeHeartbeat
from schemas.events.nodes import HealthStatus, NodeHealthCheckedPayload
from schemas.placement import partition_for
from schemas.runtime.settings import KafkaSettings
from schemas.topics import partition_count
from streams.faust.topics import node_ticks
from streams.settings import StreamsSettings
from tests.integration.streams.worker import (
    emit,
    heartbeat,
    heartbeating,
    ticking_worker,
    triggers_sent,
)
from tests.support.placed import crowd_on_partition_of

LIMIT_S = 3.0  # heartbeat_lost's limit in this test
BEAT_S = 0.5  # the steady node's heartbeat interval
OUTAGE_S = 6.0  # the worker is down this long, twice the limit
CATCH_UP_S = 12.0  # from the restart: start-up, the backlog read, ticks after it
BACKLOG = 8_000  # health checks of other nodes on its partition that warn, written meanwhile

STAMP = Stamp(source="it/agent", cluster="it")


def beat(node: str) -> NodeHeartbeat:
    return heartbeat(STAMP, node, BEAT_S)


def warning(node: str) -> NodeHealthChecked:
    payload = NodeHealthCheckedPayload(check="it", status=HealthStatus.WARN)
    return STAMP.make(NodeHealthChecked, node, payload)


async def tick(settings: KafkaSettings, topic: str, partition: int) -> None:
    """What the leader's clock sends (streams.faust.app.clock)."""
    producer = AIOKafkaProducer(bootstrap_servers=settings.bootstrap)
    await producer.start()
    try:
        now = orjson.dumps({"now": datetime.now(UTC).isoformat()})
        await producer.send_and_wait(topic, now, partition=partition)
    finally:
        await producer.stop()


@pytest.fixture
def steady(kafka_settings: KafkaSettings, unique: str) -> Iterator[str]:
    """A node that heartbeats every `BEAT_S` throughout the test, outage included."""
    node = f"steady-{unique}"
    with heartbeating(kafka_settings, STAMP, node, BEAT_S):
        yield node


def lost(triggers: list[Any]) -> set[str]:
    """Nodes some Notify called lost."""
    return {
        n
        for t in triggers
        if t.type == "Notify" and t.payload.rule == "heartbeat_lost"
        for n in t.payload.nodes
    }


def test_a_worker_behind_its_inputs_calls_no_node_lost_that_it_has_not_read(
    kafka_settings: KafkaSettings,
    worker_env: dict[str, str],
    unique: str,
    tmp_path: Path,
    steady: str,
) -> None:
    worker = ticking_worker(worker_env, tmp_path / "run", LIMIT_S)
    gone, gone_in_outage = f"gone-{unique}", f"gone-in-outage-{unique}"
    mine = partition_for(steady.encode(), partition_count("nodes"))
    backlog = crowd_on_partition_of(steady, f"crowd-{unique}", BACKLOG)
    worker.start()
    try:
        asyncio.run(emit(kafka_settings, [beat(gone)]))
        seen = triggers_sent(kafka_settings, lambda ts: gone in lost(ts), 90, worker.check)
        assert gone in lost(seen), "live ticks decided nothing"
        worker.stop()
        # The outage: the steady node goes on heartbeating behind a crowd of other nodes, and
        # the leader's clock goes on ticking.
        ticks = node_ticks(StreamsSettings(app_id=worker_env["CENTRALITY_STREAMS_APP_ID"]))
        asyncio.run(emit(kafka_settings, [beat(gone_in_outage)]))
        chunks = int(OUTAGE_S)
        for i in range(chunks):
            part = backlog[i * BACKLOG // chunks : (i + 1) * BACKLOG // chunks]
            asyncio.run(emit(kafka_settings, [warning(n) for n in part]))
            threading.Event().wait(OUTAGE_S / chunks)
            asyncio.run(tick(kafka_settings, ticks, mine))
        worker.start()
        restarted = time.monotonic()

        def caught_up(triggers: list[Any]) -> bool:
            # The silent node decided, and long enough to read the backlog and tick after it.
            return gone_in_outage in lost(triggers) and time.monotonic() - restarted > CATCH_UP_S

        seen = triggers_sent(kafka_settings, caught_up, 60, worker.check)
    finally:
        worker.stop()
    called = lost(seen)
    assert gone_in_outage in called, "ticks decided nothing after the restart"
    assert steady not in called, "a node whose heartbeats were unread was called lost"
