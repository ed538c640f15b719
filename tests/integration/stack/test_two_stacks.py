"""Two local stacks on one machine, each moved by `CENTRALITY_STACK_PORT_OFFSET` alone: its
servers, the clients told nothing else (`emit`, a ClickHouse client), its workers' metrics ports
and its state; `status` and `down` know each as local. Both are up together only as long as
the checks take."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from centrality.stack.process import port_open
from centrality.stack.settings import StackSettings
from schemas.runtime.metrics.server import DEFAULT_PORTS
from schemas.runtime.settings import KafkaSettings
from streams.history.client import connect
from streams.history.settings import ClickHouseSettings
from tests.kafka_helpers import read_events
from tests.ports import free_port, free_port_offset

pytestmark = [pytest.mark.timeout(480)]
CLI = str(Path(sys.executable).with_name("centrality"))
ROOT = Path(__file__).resolve().parents[3]


class Local:
    """One stack as its user sees it: an offset, and commands run with nothing else set."""

    def __init__(self, home: Path, offset: int) -> None:
        self.offset = offset
        self.kafka = f"127.0.0.1:{9092 + offset}"
        self.clickhouse = f"http://127.0.0.1:{8123 + offset}"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("CENTRALITY_")},
            "HOME": str(home),  # the state dir follows the offset under it
            "PYTHONPATH": str(ROOT),
            # The jars Maven fetched once for every stack on the machine; a small broker.
            "CENTRALITY_STACK_CACHE_DIR": str(StackSettings().cache_dir),
            "CENTRALITY_STACK_KAFKA_HEAP_MB": "256",
            "CENTRALITY_STACK_PORT_OFFSET": str(offset),
        }

    def cli(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CLI, *args], env={**self.env, **env}, capture_output=True, text=True, timeout=200
        )

    def status(self, **env: str) -> dict[str, dict[str, object]]:
        done = self.cli("status", "--json", **env)
        assert done.returncode == 0, done.stderr
        return {s["name"]: s for s in json.loads(done.stdout)}

    def agent(self) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [CLI, "agent", "--backend", "fake", "--interval-s", "1"],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )


def test_two_stacks_side_by_side_each_with_its_clients_and_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = free_port_offset()
    stacks = [Local(tmp_path, first), Local(tmp_path, free_port_offset(avoid=[first]))]
    try:
        for stack in stacks:
            up = stack.cli("up", "--json")
            assert up.returncode == 0, up.stderr
        for stack in stacks:
            check_local(stack)
        check_clients(stacks, monkeypatch)
        check_metrics(stacks)
    finally:
        downs = [stack.cli("down") for stack in stacks]  # whatever failed, nothing left running
    for stack, down in zip(stacks, downs, strict=True):
        assert down.returncode == 0, down.stderr
        assert not any(s["running"] for s in stack.status().values())
        assert not port_open("127.0.0.1", 9092 + stack.offset)
        assert not port_open("127.0.0.1", 8123 + stack.offset)


def check_local(stack: Local) -> None:
    status = stack.status()
    assert status["kafka"]["address"] == stack.kafka
    assert status["clickhouse"]["address"] == stack.clickhouse
    assert all(s["managed"] and s["running"] for s in status.values()), status
    state = Path(stack.env["HOME"]) / ".local" / "share" / f"centrality-{stack.offset}"
    assert (state / "run" / "kafka.pid").exists() and (state / "clickhouse").is_dir()
    # Clients told this stack's own addresses still mean this stack: local, not "external".
    told = stack.status(
        CENTRALITY_KAFKA_BOOTSTRAP=stack.kafka, CENTRALITY_CLICKHOUSE_URL=stack.clickhouse
    )
    assert all(s["managed"] and s["running"] for s in told.values()), told


def check_clients(stacks: list[Local], monkeypatch: pytest.MonkeyPatch) -> None:
    for number, stack in enumerate(stacks):
        emit = stack.cli(
            "emit", "JobExited", "--cluster", "c", "--subject", f"slurm/c/{number}",
            "--state", "FAILED", "--exit_code", "1", "--nodes", "n1",
        )  # fmt: skip
        assert emit.returncode == 0, emit.stderr
    for number, stack in enumerate(stacks):
        kafka = KafkaSettings(bootstrap=stack.kafka)
        subjects = [e.subject for e in asyncio.run(read_events(kafka, "jobs"))]
        assert subjects == [f"slurm/c/{number}"]  # its own event, never the other stack's
        # A ClickHouse client told nothing but the offset finds this stack's, migrated by `up`.
        with monkeypatch.context() as env:
            env.setenv("CENTRALITY_STACK_PORT_OFFSET", str(stack.offset))
            env.delenv("CENTRALITY_CLICKHOUSE_URL", raising=False)
            settings = ClickHouseSettings()
            assert settings.url == stack.clickhouse
            with connect(settings) as client:
                assert client.command("EXISTS TABLE events") == 1


def check_metrics(stacks: list[Local]) -> None:
    agents = [stack.agent() for stack in stacks]
    try:
        for stack, agent in zip(stacks, agents, strict=True):
            url = f"http://127.0.0.1:{DEFAULT_PORTS['agent'] + stack.offset}/healthz"
            assert _answers(url, agent), f"{url}: {agent.stderr.read() if agent.stderr else ''}"
    finally:
        for agent in agents:
            agent.terminate()
            agent.wait(timeout=30)


def _answers(url: str, process: subprocess.Popen[str], within_s: float = 60) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            time.sleep(0.5)
    return False


def test_up_told_of_a_kafka_elsewhere_that_is_not_there_says_how_to_move_the_stack(
    tmp_path: Path,
) -> None:
    stack = Local(tmp_path, free_port_offset())
    elsewhere = f"127.0.0.1:{free_port()}"
    up = stack.cli("up", CENTRALITY_KAFKA_BOOTSTRAP=elsewhere, CENTRALITY_STACK_START_TIMEOUT_S="2")
    assert up.returncode == 1
    last = up.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: Kafka at {elsewhere} not ready after 2s"), last
    assert "`up` never starts" in last and "CENTRALITY_STACK_PORT_OFFSET" in last
    assert stack.kafka in last
