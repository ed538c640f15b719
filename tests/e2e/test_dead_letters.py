"""Bad bytes never stop a consumer: each lands in the dead-letter topic with a reason and its
raw bytes, and the pipeline goes on deciding on the good events behind it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from centrality.pipeline import Pipeline
from schemas.deadletter import DeadLetter
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from schemas.signing import signed_headers
from schemas.topics import topic_name
from streams.history.query import wait_for_types
from streams.history.settings import ClickHouseSettings
from streams.testing import T0, checkpoint
from tests.factories import exited
from tests.kafka_helpers import read_messages
from tests.support.triggers import TRIGGER_KEY

pytestmark = pytest.mark.e2e

GARBAGE = {"jobs": b"\xff\x00 not json", "triggers": b'{"type": "RestartJob", "payload": 7}'}


async def produce_garbage(settings: KafkaSettings) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=settings.bootstrap)
    await producer.start()
    try:
        for topic, raw in GARBAGE.items():
            # Signed: the action worker gets past the signature to the bytes themselves.
            headers = signed_headers(raw, TRIGGER_KEY) if topic == "triggers" else None
            await producer.send_and_wait(
                topic_name(topic, settings), raw, key=b"slurm/dl/1", headers=headers
            )
    finally:
        await producer.stop()


def test_bad_bytes_are_dead_lettered_and_the_pipeline_goes_on(
    kafka_settings: KafkaSettings,
    clickhouse_settings: ClickHouseSettings,
    worker_env: dict[str, str],
    unique: str,
    tmp_path: Path,
) -> None:
    job = f"slurm/dl/{unique}"
    at = (datetime.now(UTC) - timedelta(minutes=1) - T0).total_seconds()
    with Pipeline(worker_env, tmp_path / "logs") as pipeline:
        asyncio.run(produce_garbage(kafka_settings))

        async def story() -> None:
            async with Emitter(kafka_settings) as emitter:
                await emitter.emit(checkpoint(10, subject=job, at_s=at))
                await emitter.emit(exited("FAILED", subject=job, at_s=at + 1))

        asyncio.run(story())
        wait_for_types(clickhouse_settings, [job], {"RestartJob", "ActionSucceeded"}, 150.0,
                       pipeline.check)  # fmt: skip

    letters = [
        DeadLetter.from_bytes(m) for m in asyncio.run(read_messages(kafka_settings, "deadletter"))
    ]
    by_topic = {letter.topic.rsplit(".", 1)[-1]: letter for letter in letters}
    assert by_topic["jobs"].raw == GARBAGE["jobs"] and by_topic["jobs"].reason == "malformed"
    assert by_topic["triggers"].raw == GARBAGE["triggers"]
    assert by_topic["triggers"].reason == "invalid"
    assert {letter.consumer for letter in letters} >= {worker_env["CENTRALITY_STREAMS_APP_ID"]}
