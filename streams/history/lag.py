"""How far the sink's consumer group is behind, per topic: what `centrality history lag` shows."""

from __future__ import annotations

from dataclasses import dataclass

from aiokafka import TopicPartition

from schemas.runtime import kafka_clients
from schemas.runtime.settings import KafkaSettings


@dataclass(frozen=True)
class TopicLag:
    topic: str
    end_offset: int
    committed: int
    lag: int


async def group_lag(kafka: KafkaSettings, group_id: str, topics: list[str]) -> list[TopicLag]:
    """End offsets against the group's committed offsets, summed over each topic's partitions."""
    admin = kafka_clients.admin(kafka)
    consumer = kafka_clients.consumer(kafka, enable_auto_commit=False)
    await admin.start()
    await consumer.start()
    try:
        committed = await admin.list_consumer_group_offsets(group_id)
        # The admin client, not the consumer: a consumer knows partitions of its own topics only.
        partitions = [
            TopicPartition(t["topic"], p["partition"])
            for t in await admin.describe_topics(topics)
            for p in t["partitions"]
        ]
        ends = await consumer.end_offsets(partitions) if partitions else {}
    finally:
        await consumer.stop()
        await admin.close()
    out = []
    for topic in topics:
        tps = [tp for tp in partitions if tp.topic == topic]
        end = sum(ends[tp] for tp in tps)
        done = sum(committed[tp].offset for tp in tps if tp in committed)
        out.append(TopicLag(topic, end, done, end - done))
    return out
