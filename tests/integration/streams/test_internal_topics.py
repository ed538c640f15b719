"""The streams worker's own topics exist, co-partitioned, before Faust subscribes to them."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from schemas.runtime.settings import KafkaSettings
from schemas.topics import TopicSettings
from streams.faust.topics import (
    NotCopartitionedError,
    changelogs,
    check_copartitioned,
    ensure_internal_topics,
    internal_topics,
)
from streams.settings import StreamsSettings


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


async def _create(kafka_settings: KafkaSettings, name: str, partitions: int) -> None:
    """Create a topic and wait until the broker describes it (its metadata lags the create)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_settings.bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1)])
        deadline = time.monotonic() + 15
        while not (await admin.describe_topics([name]))[0]["partitions"]:
            assert time.monotonic() < deadline, f"{name} never described"
            await asyncio.sleep(0.1)
    finally:
        await admin.close()


async def test_co_partitioning_is_checked_on_the_broker(
    kafka_settings: KafkaSettings, unique: str
) -> None:
    settings = StreamsSettings(app_id=f"streams-{unique}")
    await ensure_internal_topics(kafka_settings, settings)
    counts = await check_copartitioned(kafka_settings, settings)
    tables = [
        f"{kafka_settings.topic_prefix}{t}" for t in ("jobs", "nodes", "gpu", "actions", "status")
    ]
    assert counts == dict.fromkeys(tables + [t.name for t in internal_topics(settings)], 4)

    # A setting the topics do not have: every one of them is named.
    with pytest.raises(NotCopartitionedError) as wider:
        await check_copartitioned(kafka_settings, settings, TopicSettings(tables_partitions=8))
    assert all(f"{name} has 4" in str(wider.value) for name in counts)

    # A changelog left from another partition count (made on an earlier start): creating the
    # internal topics leaves it as it is, and the check names it.
    earlier = StreamsSettings(app_id=f"streams-{unique}-earlier")
    [changelog, *_] = changelogs(earlier)
    await _create(kafka_settings, changelog, 2)
    await ensure_internal_topics(kafka_settings, earlier)
    with pytest.raises(NotCopartitionedError, match=f"4 partitions each .* but {changelog} has 2"):
        await check_copartitioned(kafka_settings, earlier)


async def test_missing_catalog_topics_are_named(kafka_settings: KafkaSettings, unique: str) -> None:
    bare = kafka_settings.model_copy(update={"topic_prefix": f"none{unique}."})
    settings = StreamsSettings(app_id=f"streams-{unique}")
    with pytest.raises(NotCopartitionedError, match=f"missing: none{unique}.jobs"):
        await check_copartitioned(bare, settings)


def test_the_streams_command_refuses_to_start_not_co_partitioned(
    worker_env: dict[str, str], kafka_settings: KafkaSettings, unique: str
) -> None:
    settings = StreamsSettings(app_id=worker_env["CENTRALITY_STREAMS_APP_ID"])
    asyncio.run(_create(kafka_settings, changelogs(settings)[-1], 3))
    done = subprocess.run(
        [str(Path(sys.executable).with_name("centrality")), "streams"],
        env={**os.environ, **worker_env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{changelogs(settings)[-1]} has 3" in done.stdout + done.stderr
