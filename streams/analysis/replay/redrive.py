"""Re-drive replayed events into a fresh topic, keyed as on the catalog, for a live pipeline."""

from __future__ import annotations

from collections.abc import Sequence

from aiokafka.admin import NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from schemas.codec import encode
from schemas.envelope import Event
from schemas.runtime import kafka_clients
from schemas.runtime.settings import KafkaSettings


async def redrive(
    settings: KafkaSettings, topic: str, events: Sequence[Event], partitions: int = 4
) -> int:
    """Produce `events` in the given order to `topic` (created if missing); returns the count."""
    admin = kafka_clients.admin(settings)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, partitions, 1)])
    except TopicAlreadyExistsError:
        pass
    finally:
        await admin.close()
    producer = kafka_clients.producer(
        settings, client_id=f"{settings.client_id}-replay", linger_ms=5
    )
    await producer.start()
    try:
        for event in events:
            await producer.send(topic, encode(event), key=event.key)
        await producer.flush()
    finally:
        await producer.stop()
    return len(events)
