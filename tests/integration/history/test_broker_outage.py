"""The broker stopped for a while and started again under load: collectors spool through the
Emitter, the sink and the action worker (their own processes) resume, every event lands once in
ClickHouse and every trigger is acted on once. This test runs its own broker, since it stops it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from centrality.stack.kafka import LocalKafka
from centrality.stack.settings import StackSettings
from schemas.events import ActionSucceeded
from schemas.runtime.admin import ensure_topics
from schemas.runtime.emitter import Emitter, EmitterSettings
from schemas.runtime.settings import KafkaSettings
from streams.history.client import connect
from streams.history.settings import ClickHouseSettings
from tests.factories import exited
from tests.ports import free_ports
from tests.support.action_worker import count, send, wait_for
from tests.support.triggers import restart

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]
CLI = str(Path(sys.executable).with_name("centrality"))


@pytest.fixture
def own_kafka(tmp_path: Path) -> Iterator[LocalKafka]:
    port, controller = free_ports(2)
    kafka = LocalKafka(
        StackSettings(
            state_dir=tmp_path / "kafka",
            kafka_port=port,
            kafka_controller_port=controller,
            kafka_heap_mb=384,
        )
    )
    kafka.start()
    yield kafka
    kafka.stop()


def events_once(clickhouse: ClickHouseSettings) -> tuple[int, int]:
    with connect(clickhouse) as client:
        total, distinct = client.query(
            "SELECT count(), uniqExact(event_id) FROM events FINAL WHERE type = 'JobExited'"
        ).result_rows[0]
    return int(total), int(distinct)


def wait_stored(
    clickhouse: ClickHouseSettings, sent: int, procs: list[subprocess.Popen[bytes]], log: Path
) -> None:
    deadline = time.monotonic() + 120
    while events_once(clickhouse)[0] < sent:
        for p in procs:
            assert p.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, f"{events_once(clickhouse)} of {sent}"
        time.sleep(0.5)


async def emit_steadily(kafka: KafkaSettings, spool: Path, n: int, offset: int) -> None:
    """A collector sending job exits at a steady pace, spooling whenever Kafka is away."""
    options = EmitterSettings(spool_dir=spool, delivery_timeout_ms=1500)
    async with Emitter(kafka, options) as emitter:
        for i in range(offset, offset + n):
            event = exited(attempt=1, subject=f"slurm/o/{i}")
            # Recent, or the table's TTL would drop it at insert.
            await emitter.emit(event.model_copy(update={"occurred_at": datetime.now(UTC)}))
            await asyncio.sleep(0.01)
        deadline = time.monotonic() + 120
        while not emitter.spool.empty:
            assert time.monotonic() < deadline, "spool not drained"
            await asyncio.sleep(0.2)


def test_broker_stopped_and_restarted_under_load(
    own_kafka: LocalKafka,
    clickhouse_settings: ClickHouseSettings,
    worker_env: dict[str, str],
    unique: str,
    tmp_path: Path,
) -> None:
    kafka = KafkaSettings(bootstrap=own_kafka.bootstrap, topic_prefix=f"o{unique}.")
    asyncio.run(ensure_topics(kafka))
    env = {
        **os.environ,
        **worker_env,
        "CENTRALITY_KAFKA_BOOTSTRAP": kafka.bootstrap,
        "CENTRALITY_KAFKA_TOPIC_PREFIX": kafka.topic_prefix,
        "CENTRALITY_EMITTER_SPOOL_DIR": str(tmp_path / "worker-spool"),
    }
    log = tmp_path / "workers.log"
    procs = [
        subprocess.Popen([CLI, what], env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)
        for what in ("sink", "actions")
    ]
    before, after = restart("slurm/test/before"), restart("slurm/test/after")
    sent = 0
    try:
        asyncio.run(send(kafka, before))
        asyncio.run(emit_steadily(kafka, tmp_path / "spool-1", 200, 0))
        sent += 200
        # Both workers running before the outage (a worker that cannot start is systemd's to
        # restart; on a busy machine the broker went away while they still started).
        asyncio.run(
            wait_for(kafka, lambda s: count(s, ActionSucceeded, before) == 1, timeout_s=120)
        )
        wait_stored(clickhouse_settings, sent, procs, log)

        async def outage() -> None:
            load = asyncio.create_task(emit_steadily(kafka, tmp_path / "spool-2", 600, sent))
            await asyncio.sleep(1.0)
            await asyncio.to_thread(own_kafka.stop)  # mid-load
            await asyncio.sleep(8.0)
            await asyncio.to_thread(own_kafka.start)
            await load

        asyncio.run(outage())
        sent += 600
        asyncio.run(send(kafka, after))
        seen = asyncio.run(
            wait_for(kafka, lambda s: count(s, ActionSucceeded, after) == 1, timeout_s=120)
        )
        wait_stored(clickhouse_settings, sent, procs, log)
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
    assert events_once(clickhouse_settings) == (sent, sent)
    assert count(seen, ActionSucceeded, before) == count(seen, ActionSucceeded, after) == 1
    assert [p.returncode for p in procs] == [0, 0], log.read_text()[-3000:]
