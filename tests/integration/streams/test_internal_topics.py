"""The streams worker's own topics exist, co-partitioned, before Faust subscribes to them."""

from __future__ import annotations

from aiokafka.admin import AIOKafkaAdminClient

from schemas.settings import KafkaSettings, TopicSettings
from streams.settings import StreamsSettings
from streams.topics import ensure_internal_topics, internal_topics


async def test_internal_topics_are_created_once_with_the_tables_partition_count(
    kafka_settings: KafkaSettings, unique: str
) -> None:
    settings = StreamsSettings(app_id=f"streams-{unique}")
    names = [t.name for t in internal_topics(settings)]
    first = await ensure_internal_topics(kafka_settings, settings)
    assert sorted(first.created) == sorted(names) and not first.drift
    again = await ensure_internal_topics(kafka_settings, settings)
    assert not again.created and sorted(again.unchanged) == sorted(names)
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_settings.bootstrap)
    await admin.start()
    try:
        described = {t["topic"]: t for t in await admin.describe_topics(names)}
    finally:
        await admin.close()
    assert {n: len(described[n]["partitions"]) for n in names} == dict.fromkeys(
        names, TopicSettings().tables_partitions
    )
