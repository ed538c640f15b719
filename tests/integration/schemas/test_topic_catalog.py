"""The topic catalog on the real broker: created once, then compared; drift is reported, never
silently changed."""

from __future__ import annotations

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from schemas.runtime.admin import TopicCatalogError, ensure_topics
from schemas.runtime.settings import KafkaSettings
from schemas.topics import CATALOG, DAY_MS, TopicSettings, spec

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


async def test_each_family_gets_its_layout_and_a_changed_setting_is_drift(
    kafka_settings: KafkaSettings, unique: str
) -> None:
    settings = fresh(kafka_settings, unique)
    wide = TopicSettings(tables_partitions=6, logs_partitions=2, triggers_partitions=3)
    await ensure_topics(settings, topics=wide)
    # Compared with the layout they were made with: nothing differs (this also waits until the
    # broker describes the new topics).
    assert (await ensure_topics(settings, topics=wide)).drift == {}
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap)
    await admin.start()
    try:
        described = await admin.describe_topics([s.full_name(settings) for s in CATALOG])
    finally:
        await admin.close()
    counts = {
        t["topic"].removeprefix(settings.topic_prefix): len(t["partitions"]) for t in described
    }
    assert counts == {
        "jobs": 6, "nodes": 6, "gpu": 6, "actions": 6, "status": 6,
        "logs": 2, "triggers": 3, "action-ledger": 3, "silences": 3, "incidents": 3,
        "deadletter": 1,
    }  # fmt: skip

    # The same topics against another layout: every difference is reported, nothing changed.
    # (One broker: a replication factor of 2 can only be asked for, never created.)
    replicated = TopicSettings(
        tables_partitions=6,
        logs_partitions=2,
        triggers_partitions=3,
        triggers_replication_factor=2,
        triggers_min_insync_replicas=2,
    )
    report = await ensure_topics(settings, topics=replicated)
    assert sorted(report.drift) == sorted(
        spec(n).full_name(settings) for n in ("triggers", "action-ledger", "silences", "incidents")
    )
    for problems in report.drift.values():
        assert problems == [
            "replication factor 1 != catalog 2",
            "min.insync.replicas 1 != catalog 2",
        ]


async def test_a_layout_the_cluster_cannot_hold_is_refused_loudly(
    kafka_settings: KafkaSettings, unique: str
) -> None:
    settings = fresh(kafka_settings, unique)
    with pytest.raises(TopicCatalogError, match=r"(?i)replication factor"):
        await ensure_topics(settings, topics=TopicSettings(deadletter_replication_factor=3))
