"""A worker started on a topic prefix nothing created names the topics it lacks and what creates
them, and exits 2 (a configuration to fix), before it reads, writes or creates anything; a Kafka
that does not answer is still waited out, as any outage."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from centrality.collectors_cli import COLLECTED
from schemas.runtime.admin import catalog_names, require_topics
from schemas.runtime.settings import KafkaSettings
from streams.history.sink import HistorySink
from tests.ports import free_port

CLI = str(Path(sys.executable).with_name("centrality"))
ROOT = Path(__file__).resolve().parents[3]


def _catalog(kafka: KafkaSettings) -> list[str]:
    return catalog_names(kafka)


def _sink(kafka: KafkaSettings) -> list[str]:
    return HistorySink(kafka).topics()


def _collected(kafka: KafkaSettings) -> list[str]:
    return [f"{kafka.topic_prefix}{name}" for name in COLLECTED]


WORKERS = [
    (["streams"], _catalog),
    (["sink"], _sink),
    (["actions"], _catalog),
    (["agent", "--backend", "fake"], _collected),
    (["watch", "slurm"], _collected),
]


@pytest.mark.parametrize(("args", "needs"), WORKERS, ids=[" ".join(a) for a, _ in WORKERS])
def test_a_worker_on_a_prefix_never_created_names_its_topics_and_the_fix(
    args: list[str],
    needs: Callable[[KafkaSettings], list[str]],
    worker_env: dict[str, str],
    unique: str,
    tmp_path: Path,
) -> None:
    kafka = KafkaSettings(
        bootstrap=worker_env["CENTRALITY_KAFKA_BOOTSTRAP"], topic_prefix=f"none{unique}."
    )
    env = {
        **os.environ,
        **worker_env,
        "PYTHONPATH": str(ROOT),
        "CENTRALITY_KAFKA_TOPIC_PREFIX": kafka.topic_prefix,
        "CENTRALITY_METRICS_ADDR": "127.0.0.1:0",
        "CENTRALITY_EMITTER_SPOOL_DIR": str(tmp_path / "spool"),
    }
    done = subprocess.run(
        [CLI, *args], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path
    )

    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "unexpected" not in done.stderr
    assert last.startswith(f"error: Kafka at {kafka.bootstrap} has no topic "), last
    for topic in needs(kafka):
        assert topic in last
    assert "`centrality up`" in last and "`centrality doctor`" in last
    # Nothing was made on the broker for that prefix (the streams worker's own topics neither).
    assert not [
        t for t in _listed(kafka) if t.startswith((kafka.topic_prefix, f"streams-{unique}"))
    ]


def _listed(kafka: KafkaSettings) -> list[str]:
    from schemas.runtime import kafka_clients

    async def listed() -> list[str]:
        admin = kafka_clients.admin(kafka)
        await admin.start()
        try:
            return list(await admin.list_topics())
        finally:
            await admin.close()

    return asyncio.run(listed())


def test_the_check_waits_out_nothing_when_kafka_does_not_answer() -> None:
    # The worker then starts and waits Kafka out, as it does for any outage.
    closed = KafkaSettings(bootstrap=f"127.0.0.1:{free_port()}")
    started = time.monotonic()
    asyncio.run(require_topics(closed, catalog_names(closed)))
    assert time.monotonic() - started < 10
