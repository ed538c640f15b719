"""Reading topics back in tests."""

from __future__ import annotations

from aiokafka import AIOKafkaConsumer, TopicPartition

from schemas.codec import decode
from schemas.envelope import Event
from schemas.runtime.settings import KafkaSettings
from schemas.topics import partition_count, topic_name


async def read_messages(settings: KafkaSettings, topic: str) -> list[bytes]:
    """Every message on the catalog topic `topic` right now, partition by partition."""
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        name = topic_name(topic, settings)
        partitions = [TopicPartition(name, p) for p in range(partition_count(topic))]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)
        values: list[bytes] = []
        by_partition: dict[TopicPartition, list[bytes]] = {tp: [] for tp in partitions}
        while [tp for tp in partitions if await consumer.position(tp) < ends[tp]]:
            for tp, records in (await consumer.getmany(timeout_ms=1000)).items():
                by_partition[tp].extend(r.value or b"" for r in records)
        for tp in partitions:
            values.extend(by_partition[tp])
        return values
    finally:
        await consumer.stop()


async def read_events(settings: KafkaSettings, topic: str) -> list[Event]:
    return [e for raw in await read_messages(settings, topic) for e in decode(raw)]
