"""Our Faust transport on the real broker: the seek back to the committed offsets.

Faust drops the batch it has fetched whenever its flow stops, and relies on this seek to read
those records again; a partition the seek leaves where it is loses them (fix 7 in
streams/faust/transport.py). Faust's recovery clears the stream queues right after the seek:
records delivered in between must be delivered again (fix 4).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import faust
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.structs import OffsetAndMetadata

from schemas.runtime.settings import KafkaSettings
from streams.faust import transport as faust_transport

RECORDS = 10


async def _prepare(bootstrap: str, topic: str, group: str, committed: int | None) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for _ in range(RECORDS):
            await producer.send_and_wait(topic, b"x")
    finally:
        await producer.stop()
    if committed is not None:  # as another member of the group would have
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
        )
        await consumer.start()
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            await consumer.commit({tp: OffsetAndMetadata(committed, "")})
        finally:
            await consumer.stop()


async def _until(condition: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        await asyncio.sleep(0.05)


async def _read_twice(bootstrap: str, topic: str, datadir: str, last: int) -> list[int]:
    """Offsets an agent sees: every record, then whatever the seek back delivers again."""
    scheme = faust_transport.install(faust_transport.FETCH_MAX_WAIT_MS)
    app = faust.App(
        topic,  # the group: the test committed (or not) for it
        broker=f"{scheme}://{bootstrap}",
        store="memory://",
        datadir=datadir,
        autodiscover=False,
        web_enabled=False,
        broker_commit_interval=300,  # the app commits nothing meanwhile
        consumer_auto_offset_reset="earliest",
    )
    seen: list[int] = []

    @app.agent(app.topic(topic, value_serializer="raw"))
    async def collect(stream: Any) -> None:
        async for event in stream.events():
            seen.append(event.message.offset)
            await asyncio.sleep(0.05)  # slower than the fetcher: records wait in the queue

    await app.start()
    try:
        await _until(lambda: seen[-1:] == [last], timeout_s=60)
        first_pass = len(seen)
        # What Faust's recovery does after a rebalance: seek, let the loop run, clear the stream
        # queues (`flow_control.resume()`), resume the flow.
        await app.consumer.perform_seek()
        await asyncio.sleep(0.2)  # a fetcher the seek left flowing fills the queue meanwhile
        app.flow_control.resume()
        app.consumer.resume_flow()
        with contextlib.suppress(TimeoutError):  # the assertion shows what came again, if any
            await _until(lambda: len(seen) > first_pass and seen[-1] == last, timeout_s=15)
    finally:
        await app.stop()
    return seen


@pytest.mark.parametrize("committed", [None, 0, 5], ids=lambda c: f"committed-{c}")
def test_the_seek_back_reads_again_from_the_committed_offset_or_the_start(
    kafka_settings: KafkaSettings, unique: str, tmp_path: Path, committed: int | None
) -> None:
    name = f"seek-{unique}"
    asyncio.run(_prepare(kafka_settings.bootstrap, name, name, committed))
    seen = asyncio.run(_read_twice(kafka_settings.bootstrap, name, str(tmp_path), RECORDS - 1))
    once = list(range(committed or 0, RECORDS))
    assert seen == once + once
