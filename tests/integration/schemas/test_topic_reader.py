"""A topic read whole, then again from where it ended, on the real broker: each record once,
a reload from the start, and a consumer that sits paused between reads (an idle consumer's
long poll held every read's first request up by half a second: `schemas.runtime.topic_reader`)."""

from __future__ import annotations

import asyncio

import pytest

from schemas.events import NodeStatusChanged
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from schemas.runtime.topic_reader import Records, TopicReader
from schemas.topics import topic_name
from streams.testing import envelope

pytestmark = pytest.mark.integration


def statuses(first: int, count: int) -> list[NodeStatusChanged]:
    return [
        NodeStatusChanged(**envelope(f"n{i}"), payload={"state": "in_service"})
        for i in range(first, first + count)
    ]


async def test_reads_what_was_written_since_once_and_sits_paused_between_reads(
    kafka_settings: KafkaSettings,
) -> None:
    seen: list[bytes] = []

    def keep(records: Records) -> None:
        seen.extend(r.key for r in records)

    reader = TopicReader(
        kafka_settings, topic_name("status", kafka_settings), keep, client_id="test-reader"
    )
    try:
        async with Emitter(kafka_settings) as emitter:
            for event in statuses(0, 40):
                await emitter.emit(event)
        assert await reader.load() == 40
        consumer = reader._consumer
        assert consumer is not None and consumer.paused() == consumer.assignment()
        await asyncio.sleep(0.2)  # an unpaused consumer would have fetched meanwhile
        async with Emitter(kafka_settings) as emitter:
            for event in statuses(40, 10):
                await emitter.emit(event)
        await reader.refresh()
        await reader.refresh()  # nothing new: nothing read twice
        assert sorted(seen) == sorted(f"n{i}".encode() for i in range(50))
        assert await reader.load() == 50  # read again from the start
        assert len(seen) == 100
    finally:
        await reader.stop()
