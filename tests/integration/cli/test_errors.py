"""The `centrality` executable on bad input and without its services: one line, never a traceback.

Kafka and ClickHouse are pointed at a loopback port nothing listens on, so no stack is needed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ports import free_port

CLI = str(Path(sys.executable).with_name("centrality"))
ROOT = Path(__file__).resolve().parents[3]


CLOSED = free_port()  # free a moment ago: nothing listens there


def run(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    closed = CLOSED
    environ = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "CENTRALITY_KAFKA_BOOTSTRAP": f"127.0.0.1:{closed}",
        "CENTRALITY_CLICKHOUSE_URL": f"http://127.0.0.1:{closed}",
        "CENTRALITY_EMITTER_SPOOL_DIR": str(tmp_path / "spool"),
        "CENTRALITY_TRIGGER_KEY_FILE": str(tmp_path / "no.key"),
        **env,
    }
    environ.pop("CENTRALITY_TRIGGER_KEY", None)
    return subprocess.run(
        [CLI, *args], env=environ, capture_output=True, text=True, timeout=120, cwd=tmp_path
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


USER_ERRORS = [
    (["replay", "--since", "garbage"], ["'--since'", "'garbage' is not a time", "30m"]),
    (["history", "job", "j1", "--until", "2026-13-01"], ["'--until'", "ISO time"]),
    (["simulate", "--nodes", "many", "--dry-run"], ["'--nodes'", "valid integer"]),
    (["simulate", "--nodes", "-1", "--dry-run"], ["nodes", "greater than or equal to 1"]),
    (["replay", "--kafka", "jobs:zero"], ["--kafka", "TOPIC:PARTITION:START-END"]),
    (["replay", "--kafka", "jobs:0:0-5", "--since", "1h"], ["--since/--until"]),
    (
        ["emit", "JobExitted", "--cluster", "c"],
        ["unknown event type", "did you mean JobExited", "schemas list"],
    ),
    (["emit", "JobExited", "--state", "EXPLODED"], ["payload.state", "subject"]),
    (["actions"], ["needs the trigger signing key", "CENTRALITY_TRIGGER_KEY"]),
    (["no-such-command"], ["No such command", "centrality --help"]),
    (["nccl", "/no/such/nccl.log", "--dry-run"], ["no such file: /no/such/nccl.log"]),
]


@pytest.mark.parametrize(("args", "says"), USER_ERRORS, ids=[" ".join(a) for a, _ in USER_ERRORS])
def test_a_user_error_is_one_line_and_exit_2(
    args: list[str], says: list[str], tmp_path: Path
) -> None:
    result = run(args, tmp_path)
    line = one_line(result)
    assert result.returncode == 2
    for words in says:
        assert words in line


def test_a_bad_setting_names_its_variable(tmp_path: Path) -> None:
    result = run(["history", "job", "j1"], tmp_path, CENTRALITY_CLICKHOUSE_TTL_DAYS="0")
    line = one_line(result)
    assert result.returncode == 2
    assert "CENTRALITY_CLICKHOUSE_TTL_DAYS='0'" in line and "greater than or equal to 1" in line


DOWN = [
    (["replay", "--since", "1h"], "ClickHouse", "CENTRALITY_CLICKHOUSE_URL"),
    (["history", "node", "n1"], "ClickHouse", "CENTRALITY_CLICKHOUSE_URL"),
    (["history", "lag"], "Kafka", "CENTRALITY_KAFKA_BOOTSTRAP"),
    (["replay", "--kafka", "jobs:0:0-5"], "Kafka", "CENTRALITY_KAFKA_BOOTSTRAP"),
    (["bench", "agent", "--duration-s", "2"], "Kafka", "CENTRALITY_KAFKA_BOOTSTRAP"),
]


@pytest.mark.parametrize(("args", "service", "setting"), DOWN, ids=[" ".join(a) for a, *_ in DOWN])
def test_an_unreachable_service_is_one_line_naming_it_and_exit_1(
    args: list[str], service: str, setting: str, tmp_path: Path
) -> None:
    result = run(args, tmp_path)
    line = one_line(result)
    assert result.returncode == 1
    assert f"{service} at " in line and f"127.0.0.1:{CLOSED} is unreachable" in line
    assert "make up" in line and setting in line


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    result = run(["--debug", "history", "lag"], tmp_path)
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "KafkaConnectionError" in result.stderr
    assert any(line.startswith("error: Kafka at ") for line in result.stderr.splitlines())


def test_emit_spool_without_kafka_spools_the_event_and_says_so_in_one_line(
    tmp_path: Path,
) -> None:
    args = ["emit", "JobExited", "--cluster", "c", "--subject", "slurm/c/1", "--state", "FAILED"]
    result = run([*args, "--spool"], tmp_path)
    assert result.returncode == 0  # asked for: the spool delivers it when Kafka is back
    [line] = [x for x in result.stderr.splitlines() if not x.startswith("{")]  # logs are JSON
    assert line.startswith(f"warning: Kafka at 127.0.0.1:{CLOSED} is unreachable; JobExited ")
    assert f"is spooled in {tmp_path / 'spool'}" in line and "make up" in line
    assert any((tmp_path / "spool").iterdir())
