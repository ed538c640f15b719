"""The CLI tells the truth: a one-shot command that could not deliver fails (exit 1) and keeps
nothing unless asked to (`--spool`); a missing topic is not "Kafka unreachable"; the spool and
the dead letters can be listed and dropped by a person."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.deadletter import DeadLetter
from schemas.runtime import kafka_clients
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name
from tests.ports import free_port

pytestmark = pytest.mark.integration
CLI = str(Path(sys.executable).with_name("centrality"))
EXITED = ["emit", "JobExited", "--cluster", "c", "--subject", "slurm/c/9", "--state", "FAILED"]


def run(args: list[str], kafka: KafkaSettings, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CENTRALITY_KAFKA_BOOTSTRAP": kafka.bootstrap,
        "CENTRALITY_KAFKA_TOPIC_PREFIX": kafka.topic_prefix,
        "CENTRALITY_EMITTER_SPOOL_DIR": str(tmp_path / "spool"),
        "CENTRALITY_EMITTER_DELIVERY_TIMEOUT_MS": "1000",
    }
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=120)


def last_line(result: subprocess.CompletedProcess[str]) -> str:
    return result.stderr.strip().splitlines()[-1]


def test_undelivered_fails_and_keeps_nothing_unless_asked(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    away = kafka_settings.model_copy(update={"bootstrap": f"127.0.0.1:{free_port()}"})
    failed = run(EXITED, away, tmp_path)
    assert failed.returncode == 1
    assert "did not take 1 message(s): nothing of them was kept" in last_line(failed)
    listed = run(["spool", "list", "--json"], away, tmp_path)
    assert sum(r["messages"] or 0 for r in json.loads(listed.stdout)) == 0
    simulated = run(["simulate", "--nodes", "2", "--duration-s", "10"], away, tmp_path)
    assert simulated.returncode == 1 and "did not take" in last_line(simulated)

    kept = run([*EXITED, "--spool"], away, tmp_path)
    assert kept.returncode == 0 and "is spooled in" in kept.stderr
    [spool] = json.loads(run(["spool", "list", "--json"], away, tmp_path).stdout)
    topic = topic_name("jobs", kafka_settings)
    assert (spool["messages"], spool["by_topic"]) == (1, {topic: 1})
    dropped = run(["spool", "drop", "--yes"], away, tmp_path)
    assert dropped.returncode == 0 and "dropped 1 message(s)" in dropped.stderr
    [spool] = json.loads(run(["spool", "list", "--json"], away, tmp_path).stdout)
    assert spool["messages"] == 0


def test_a_missing_topic_is_not_an_unreachable_kafka(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    nowhere = kafka_settings.model_copy(update={"topic_prefix": "never-created."})
    failed = run(EXITED, nowhere, tmp_path)
    assert failed.returncode == 1
    line = last_line(failed)
    assert "Kafka answers, so a topic is probably missing" in line and "centrality up" in line


def test_a_port_that_is_not_a_number_is_one_line(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    bad = kafka_settings.model_copy(update={"bootstrap": "127.0.0.1:kafka"})
    failed = run(EXITED, bad, tmp_path)
    assert failed.returncode == 2
    [line] = failed.stderr.strip().splitlines()
    assert line.startswith("error: CENTRALITY_KAFKA_BOOTSTRAP='127.0.0.1:kafka'")
    assert "is not host:port with a port number" in line


async def dead_letter(kafka: KafkaSettings, n: int) -> None:
    producer = kafka_clients.producer(kafka)
    await producer.start()
    try:
        for i in range(n):
            letter = DeadLetter(
                reason="limit",
                detail=f"test {i}",
                consumer="test",
                topic="t",
                partition=0,
                offset=i,
                key=None,
                raw=b"{",
            )
            topic = topic_name("deadletter", kafka)
            await producer.send_and_wait(topic, value=letter.to_bytes(), key=b"t")
    finally:
        await producer.stop()


def test_dead_letters_are_listed_and_dropped(kafka_settings: KafkaSettings, tmp_path: Path) -> None:
    asyncio.run(dead_letter(kafka_settings, 3))
    listed = json.loads(run(["deadletters", "list", "--json"], kafka_settings, tmp_path).stdout)
    assert [(r["reason"], r["detail"]) for r in listed] == [
        ("limit", f"test {i}") for i in range(3)
    ]
    dropped = run(["deadletters", "drop", "--yes"], kafka_settings, tmp_path)
    assert dropped.returncode == 0 and "dropped 3 dead letter(s)" in dropped.stderr
    assert json.loads(run(["deadletters", "list", "--json"], kafka_settings, tmp_path).stdout) == []
