"""Fix 13: a produce batch's lifetime leaves out the time the whole Kafka cluster was away."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import TopicPartition
from aiokafka.producer import message_accumulator

from schemas.runtime.outages import OUTAGES
from streams.faust import batch_lifetime


async def test_a_batch_expires_after_its_ttl_of_the_cluster_being_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(message_accumulator, "MessageBatch", message_accumulator.MessageBatch)
    batch_lifetime.install()  # undone after the test
    kafka = OUTAGES.watch("kafka", "127.0.0.1:1", lambda: False)
    batch = message_accumulator.MessageBatch(
        TopicPartition("t", 0), builder=None, ttl=0.2, linger_time=0
    )
    await asyncio.sleep(0.1)
    kafka.observe(False, time.monotonic(), 60.0)
    await asyncio.sleep(0.5)  # away for more than its ttl
    assert not batch.expired()
    kafka.observe(True, time.monotonic(), 60.0)
    assert not batch.expired()
    await asyncio.sleep(0.15)  # 0.1 s up before, 0.15 s since
    assert batch.expired()
    # A batch made while the cluster is up ages as aiokafka's own do.
    fresh = message_accumulator.MessageBatch(
        TopicPartition("t", 0), builder=None, ttl=0.2, linger_time=0
    )
    await asyncio.sleep(0.25)
    assert fresh.expired()
