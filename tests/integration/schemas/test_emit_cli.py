"""`centrality emit` from a shell, as an operator or a bespoke script would use it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.events import JobExited
from schemas.settings import KafkaSettings
from tests.kafka_helpers import read_events

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
    assert "payload.state" in result.stderr
    unknown = run(["emit", "NoSuchThing", "--cluster", "c"], kafka_settings, tmp_path)
    assert unknown.returncode == 2 and "JobExited" in unknown.stderr
    assert asyncio.run(read_events(kafka_settings, "jobs")) == []
