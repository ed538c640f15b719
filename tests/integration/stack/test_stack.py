"""`centrality up|status|down` as a new user runs them: both services up, then nothing left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from centrality.stack.process import port_open
from tests.ports import free_ports

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
CLI = str(Path(sys.executable).with_name("centrality"))


def test_up_status_down_leaves_nothing_behind(tmp_path: Path) -> None:
    kafka, controller, clickhouse = free_ports(3)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CENTRALITY_")},
        "CENTRALITY_STACK_STATE_DIR": str(tmp_path / "state"),
        "CENTRALITY_STACK_KAFKA_PORT": str(kafka),
        "CENTRALITY_STACK_KAFKA_CONTROLLER_PORT": str(controller),
        "CENTRALITY_STACK_CLICKHOUSE_PORT": str(clickhouse),
    }

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=180)

    try:
        check_lifecycle(cli, kafka, clickhouse)
    finally:
        cli("down")  # whatever failed above, leave nothing running


def check_lifecycle(
    cli: Callable[..., subprocess.CompletedProcess[str]], kafka: int, clickhouse: int
) -> None:
    up = cli("up", "--json")
    assert up.returncode == 0, up.stderr
    report = json.loads(up.stdout)
    assert len(report["catalog"]["created"]) >= 7 and report["migrations_applied"]
    assert json.loads(cli("up", "--json").stdout)["catalog"]["created"] == []  # idempotent

    status = {s["name"]: s for s in json.loads(cli("status", "--json").stdout)}
    assert status["kafka"]["running"] and status["clickhouse"]["running"]
    pids = [status["kafka"]["pid"], status["clickhouse"]["pid"]]

    down = cli("down")
    assert down.returncode == 0, down.stderr
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists(), f"process {pid} survived `down`"
    assert not port_open("127.0.0.1", kafka) and not port_open("127.0.0.1", clickhouse)
    after = {s["name"]: s for s in json.loads(cli("status", "--json").stdout)}
    assert not after["kafka"]["running"] and not after["clickhouse"]["running"]
