"""The real Faust worker (`python -m streams worker`, as `centrality streams` runs it) logs
through schemas.runtime.logs: with no broker to reach it starts, fails and stops, and every line it
writes on the way (Faust's, mode's, aiokafka's) is one JSON object. With a broker it is
tests/integration/streams/test_worker_logs.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[3]


def run_worker(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CENTRALITY_")}
    done = subprocess.run(
        [sys.executable, "-m", "streams", "--quiet", "worker", "--without-web"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={
            **base,
            "PYTHONPATH": str(ROOT),
            "CENTRALITY_KAFKA_BOOTSTRAP": "127.0.0.1:9",  # nothing listens there
            "CENTRALITY_TRIGGER_KEY": "k" * 32,
            "CENTRALITY_STREAMS_DATA_DIR": str(tmp_path / "streams"),
            **env,
        },
    )
    assert done.returncode != 0  # it cannot run without Kafka
    assert done.stdout == ""  # no banner, no spinner bytes
    return done


def json_lines(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in done.stderr.splitlines()]


def test_every_line_of_a_worker_that_cannot_reach_kafka_is_json(tmp_path: Path) -> None:
    lines = json_lines(run_worker(tmp_path))
    for line in lines:
        assert {"timestamp", "level", "logger", "event"} <= set(line), line
    loggers = {line["logger"].split(".")[0] for line in lines}
    assert {"faust", "aiokafka"} <= loggers
    assert any(line["event"] == "[^Worker]: Starting..." for line in lines)
    [refused] = [line for line in lines if line["logger"] == "aiokafka"]
    assert refused["level"] == "error" and "Unable connect" in refused["event"]
    [fatal] = [line for line in lines if "exception" in line]
    assert fatal["logger"] == "faust.worker"
    assert fatal["exception"].startswith("Traceback (most recent call last):")
    assert "KafkaConnectionError" in fatal["exception"].splitlines()[-1]


def test_the_worker_obeys_the_level_setting(tmp_path: Path) -> None:
    lines = json_lines(run_worker(tmp_path, CENTRALITY_LOG_LEVEL="ERROR"))
    assert lines and {line["level"] for line in lines} == {"error"}


def test_a_console_format_is_readable_text(tmp_path: Path) -> None:
    done = run_worker(tmp_path, CENTRALITY_LOG_FORMAT="console")
    lines = done.stderr.splitlines()
    assert lines and not any(line.startswith("{") for line in lines)
    assert any("[info     ] [^Worker]: Starting..." in line for line in lines)
    assert "Traceback (most recent call last)" in done.stderr
