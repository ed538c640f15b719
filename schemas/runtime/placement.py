"""The placement a live consumer checks (`schemas.placement`), with the partition counts its
metadata holds."""

from __future__ import annotations

from aiokafka import AIOKafkaConsumer

from schemas.placement import Placement
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name


def read_by(consumer: AIOKafkaConsumer, settings: KafkaSettings) -> Placement:
    """The placement a consumer of `settings`' topics checks, with the partition counts its
    metadata holds (a topic it has not seen yet is checked for all but its partition)."""

    def partitions(topic: str) -> int | None:
        found = consumer.partitions_for_topic(topic)
        return len(found) if found else None

    return Placement.of(lambda name: topic_name(name, settings), partitions)
