"""The topic catalog on the real broker: created once, then compared; drift is reported, never
silently changed."""

from __future__ import annotations

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from schemas.admin import ensure_topics
from schemas.settings import KafkaSettings
from schemas.topics import CATALOG, DAY_MS, spec

pytestmark = pytest.mark.integration


def fresh(kafka_settings: KafkaSettings, unique: str) -> KafkaSettings:
    return kafka_settings.model_copy(update={"topic_prefix": f"cat{unique}."})


async def test_created_once_then_every_topic_matches(
    kafka_settings: KafkaSettings, unique: str
) -> None:
    settings = fresh(kafka_settings, unique)
    first = await ensure_topics(settings)
    assert sorted(first.created) == sorted(s.full_name(settings) for s in CATALOG)
    again = await ensure_topics(settings)
    assert again.created == [] and again.drift == {}  # incl. the ledger's "compact,delete"
    assert sorted(again.unchanged) == sorted(first.created)


async def test_a_topic_that_differs_is_reported_and_left_as_it_is(
    kafka_settings: KafkaSettings, unique: str
) -> None:
    settings = fresh(kafka_settings, unique)
    gpu = spec("gpu").full_name(settings)
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap)
    await admin.start()
    try:
        await admin.create_topics(
            [NewTopic(gpu, 2, 1, topic_configs={"retention.ms": str(DAY_MS)})]
        )
        report = await ensure_topics(settings)
        described = await admin.describe_topics([gpu])
    finally:
        await admin.close()
    assert gpu not in report.created
    assert sorted(report.drift) == [gpu]
    assert any(p.startswith("partitions 2 != catalog 4") for p in report.drift[gpu])
    assert any(p.startswith("retention.ms 86400000 != catalog") for p in report.drift[gpu])
    assert len(described[0]["partitions"]) == 2  # not changed behind the operator's back
