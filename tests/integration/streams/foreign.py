"""A producer nobody here wrote: librdkafka (confluent-kafka), as another language would use it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any

import confluent_kafka
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError
from aiokafka.structs import TopicPartition

from schemas.topics import partition_count

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def produce(
    bootstrap: str,
    messages: Iterable[tuple[str, bytes | None, bytes, int | None]],
    codec: str,
    partitioner: str = "murmur2_random",  # Java's murmur2, as docs/events.md asks
) -> int:
    """Send (topic, key, value, partition or None) and wait for every delivery; how many."""
    failures: list[Any] = []
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": codec,
            "partitioner": partitioner,
            "linger.ms": 20,
            "message.max.bytes": 1_000_000,
        }
    )

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failures.append(err)

    sent = 0
    for topic, key, value, partition in messages:
        extra = {"partition": partition} if partition is not None else {}
        while True:
            try:
                producer.produce(topic, value=value, key=key, on_delivery=delivered, **extra)
                break
            except BufferError:  # the local queue is full: let it drain
                producer.poll(0.1)
        sent += 1
    assert producer.flush(60) == 0, "librdkafka could not deliver everything"
    assert not failures, failures[:3]
    return sent


async def committed_up_to_end(
    bootstrap: str, group: str, topics: list[str], timeout_s: float
) -> None:
    """Until `group` has committed the end offset of every partition of `topics` (Kafka names,
    each with the catalog's partition count)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)  # for end offsets only
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await consumer.start()
    await admin.start()
    try:
        partitions = [TopicPartition(t, p) for t in topics for p in range(partition_count("jobs"))]
        ends = await consumer.end_offsets(partitions)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                committed = await admin.list_consumer_group_offsets(group)
            except KafkaError as exc:  # a fresh broker elects its group coordinator first
                if not exc.retriable:
                    raise
                committed = {}
            behind = {
                tp: end
                for tp, end in ends.items()
                if end and (tp not in committed or committed[tp].offset < end)
            }
            if not behind:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{group} still behind on {len(behind)} partitions")
            await asyncio.sleep(0.2)
    finally:
        await admin.close()
        await consumer.stop()
