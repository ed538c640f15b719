"""A changelog record the broker refuses after taking it (here: over the changelog topic's
`max.message.bytes`) must never be committed past: the worker stops, and its successor restores
the tables from the changelog and re-decides from the last commit, losing nothing."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from schemas.runtime.settings import KafkaSettings
from tests.integration.streams.test_streams_worker import (
    emit,
    oracle,
    run_until,
    scenario,
    tables_match_eventually,
)
from tests.integration.streams.worker import StreamsWorker


async def set_max_message_bytes(settings: KafkaSettings, topic: str, value: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap)
    await admin.start()
    try:
        resource = ConfigResource(ConfigResourceType.TOPIC, topic, {"max.message.bytes": value})
        await admin.alter_configs([resource])
    finally:
        await admin.close()


def test_a_refused_changelog_record_is_never_committed_past(
    kafka_settings: KafkaSettings, worker_env: dict[str, str], unique: str, tmp_path: Path
) -> None:
    before, after = scenario(unique, 3), scenario(unique, 3, first=3)
    expected, brain = oracle(before + after)
    expected_before, _ = oracle(before)
    app_id = worker_env["CENTRALITY_STREAMS_APP_ID"]
    changelog = f"{app_id}-jobs-changelog"
    worker = StreamsWorker(worker_env, tmp_path / "run")
    worker.start()
    try:
        asyncio.run(emit(kafka_settings, before))
        run_until(worker, kafka_settings, expected_before)
        asyncio.run(set_max_message_bytes(kafka_settings, changelog, "64"))
        asyncio.run(emit(kafka_settings, after))
        deadline = time.monotonic() + 30
        while worker.process.pid() is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        log = worker.process.log_file.read_text()
        assert worker.process.pid() is None, "the worker went on past a refused changelog record"
        assert "changelog_delivery_failed" in log
        asyncio.run(set_max_message_bytes(kafka_settings, changelog, "1048588"))
        worker.start()
        run_until(worker, kafka_settings, expected)
        tables_match_eventually(brain, app_id, kafka_settings)
    finally:
        worker.stop()
