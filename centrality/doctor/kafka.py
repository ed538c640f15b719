"""Kafka reachable, and the topic catalog present as the catalog says."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

from centrality.doctor import Finding, check
from centrality.errors import START_HINT
from schemas.runtime import kafka_clients
from schemas.runtime.admin import inspect_topics
from schemas.runtime.settings import KafkaSettings

TIMEOUT_MS = 5000


@check("kafka")
def kafka() -> Iterator[Finding]:
    settings = KafkaSettings()

    async def describe() -> tuple[int, str]:
        admin = kafka_clients.admin(settings, request_timeout_ms=TIMEOUT_MS)
        try:
            await admin.start()
            cluster = await admin.describe_cluster()
        finally:
            await admin.close()
        return len(cluster["brokers"]), str(cluster["cluster_id"])

    brokers, cluster_id = asyncio.run(describe())
    yield Finding("kafka", "ok", f"{settings.bootstrap}: {brokers} broker(s), cluster {cluster_id}")


@check("topics", needs="kafka")
def topics() -> Iterator[Finding]:
    settings = KafkaSettings()
    missing, report = asyncio.run(inspect_topics(settings))
    if missing:
        yield Finding(
            "topics",
            "fail",
            f"{len(missing)} catalog topic(s) missing: {', '.join(missing)}",
            f"{START_HINT}: it creates them",
        )
    for name, problems in report.drift.items():
        yield Finding(
            "topics",
            "warn",
            f"{name} differs from the catalog: {'; '.join(problems)}",
            "recreate the topic, or alter it to match schemas/topics.py (up never changes one)",
        )
    if not missing and not report.drift:
        yield Finding(
            "topics",
            "ok",
            f"{len(report.unchanged)} topics as the catalog says ({settings.topic_prefix}*)",
        )
