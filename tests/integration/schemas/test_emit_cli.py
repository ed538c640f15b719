"""`centrality emit` from a shell, as an operator or a bespoke script would use it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer

from schemas.codec import decode
from schemas.events import JobExited
from schemas.operators import authenticate
from schemas.runtime.settings import KafkaSettings
from schemas.signing import verify
from schemas.topics import topic_name
from tests.kafka_helpers import read_events
from tests.support.operators import ALICE, TRUSTED
from tests.support.triggers import TRIGGER_KEY

pytestmark = pytest.mark.integration
CLI = str(Path(sys.executable).with_name("centrality"))


def run(args: list[str], kafka: KafkaSettings, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CENTRALITY_KAFKA_BOOTSTRAP": kafka.bootstrap,
        "CENTRALITY_KAFKA_TOPIC_PREFIX": kafka.topic_prefix,
        "CENTRALITY_EMITTER_SPOOL_DIR": str(tmp_path / "spool"),
    }
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=60)


def test_emit_sends_a_valid_event(kafka_settings: KafkaSettings, tmp_path: Path) -> None:
    result = run(
        [
            "emit",
            "JobExited",
            "--cluster",
            "c1",
            "--subject",
            "slurm/c1/7",
            "--state",
            "FAILED",
            "--exit_code",
            "1",
            "--nodes",
            "n1",
            "--nodes",
            "n2",
            "--json",
        ],
        kafka_settings,
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    printed = JobExited.model_validate_json(result.stdout)
    [got] = asyncio.run(read_events(kafka_settings, "jobs"))
    assert got == printed
    assert isinstance(got, JobExited)
    assert got.payload.nodes == ("n1", "n2") and got.payload.exit_code == 1
    assert got.source.startswith("cli@")


def test_emit_explains_invalid_input_and_sends_nothing(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    result = run(
        ["emit", "JobExited", "--cluster", "c1", "--subject", "s", "--state", "EXPLODED"],
        kafka_settings,
        tmp_path,
    )
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "payload.state" in line
    unknown = run(["emit", "JobExitted", "--cluster", "c"], kafka_settings, tmp_path)
    [line] = unknown.stderr.strip().splitlines()
    assert unknown.returncode == 2 and "did you mean JobExited" in line
    assert asyncio.run(read_events(kafka_settings, "jobs")) == []


QUARANTINE = [
    "emit", "QuarantineNodes", "--cluster", "c1", "--subject", "slurm/c1/7", "--nodes", "n1",
    "--rule", "operator", "--window", "w1", "--reason", "by hand", "--caused_by", "[]",
]  # fmt: skip


def test_emit_of_a_trigger_without_an_operator_key_is_refused(
    kafka_settings: KafkaSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CENTRALITY_TRIGGER_KEY", TRIGGER_KEY.get_secret_value())  # not enough
    monkeypatch.setenv("CENTRALITY_OPERATOR_KEY_FILE", str(tmp_path / "no.key"))
    result = run(QUARANTINE, kafka_settings, tmp_path)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "no operator key at" in line and "centrality operator keygen" in line
    assert asyncio.run(read_events(kafka_settings, "triggers")) == []


def test_emit_of_a_trigger_is_the_operators_command_signed_with_their_key(
    kafka_settings: KafkaSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never with the streams app's key: a person's trigger names the person."""
    monkeypatch.setenv("CENTRALITY_TRIGGER_KEY", TRIGGER_KEY.get_secret_value())
    monkeypatch.setenv("CENTRALITY_OPERATOR_KEY_FILE", str(ALICE.save(tmp_path / "alice.key")))
    result = run(QUARANTINE, kafka_settings, tmp_path)
    assert result.returncode == 0, result.stderr
    [(value, headers)] = asyncio.run(signed_records(kafka_settings))
    assert authenticate(value, headers, TRUSTED)[0] == "alice"
    assert decode(value)[0].payload.operator == "alice"  # type: ignore[attr-defined]
    assert not verify(value, headers, TRIGGER_KEY)


async def signed_records(kafka: KafkaSettings) -> list[tuple[bytes, list[tuple[str, bytes]]]]:
    consumer = AIOKafkaConsumer(
        topic_name("triggers", kafka), bootstrap_servers=kafka.bootstrap,
        auto_offset_reset="earliest", enable_auto_commit=False,
    )  # fmt: skip
    await consumer.start()
    try:
        fetched = await consumer.getmany(timeout_ms=5000)
        return [(r.value or b"", list(r.headers)) for rs in fetched.values() for r in rs]
    finally:
        await consumer.stop()


def test_action_worker_refuses_to_start_without_the_key(
    kafka_settings: KafkaSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CENTRALITY_TRIGGER_KEY", raising=False)
    monkeypatch.setenv("CENTRALITY_TRIGGER_KEY_FILE", str(tmp_path / "no.key"))
    result = run(["actions"], kafka_settings, tmp_path)
    assert result.returncode == 2
    assert "the action worker needs the trigger signing key" in result.stderr
    assert "Traceback" not in result.stderr
