"""One local Ray head for the test session (`ray start --head --block`, loopback only).

Ray is heavy (10-16 s to start, ~1 GB), so the fixture is session-scoped. Every port and the
temp dir are the fixture's own, so other Ray clusters on the machine are untouched; stopping
ends only the process group the fixture started (never `ray stop`, which kills every Ray on the
host). The head advertises a custom resource `node:<name>`-style pin for `run_on_nodes`: its
node name is its IP, 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from centrality.stack.process import ManagedProcess, ServiceError
from tests.ports import free_port, free_ports


class RayHead:
    def __init__(self, run_dir: Path, start_timeout_s: float = 90.0) -> None:
        self.run_dir = run_dir
        # Ray puts unix sockets under its temp dir: keep the path short (108-byte limit).
        self.temp_dir = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
        # Drawn together, so no two components get the same port.
        self.dashboard_port, *self._ports = free_ports(9)
        self.start_timeout_s = start_timeout_s
        self._process = ManagedProcess("ray-head", run_dir)

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def start(self) -> None:
        ray = Path(sys.executable).parent / "ray"  # the venv's, even when it is not activated
        binary = str(ray) if ray.is_file() else shutil.which("ray")
        if binary is None:
            raise ServiceError("ray is not installed: pip install -e '.[test]'")
        gcs, client, node_manager, objects, metrics, agent, agent_grpc, runtime_env = self._ports
        worker_low = _worker_range_clear_of(
            [
                self.dashboard_port,
                gcs,
                client,
                node_manager,
                objects,
                metrics,
                agent,
                agent_grpc,
                runtime_env,
            ]
        )
        argv = [
            binary,
            "start",
            "--head",
            "--block",
            "--disable-usage-stats",
            "--node-ip-address=127.0.0.1",
            "--dashboard-host=127.0.0.1",
            f"--port={gcs}",
            f"--dashboard-port={self.dashboard_port}",
            f"--ray-client-server-port={client}",
            f"--node-manager-port={node_manager}",
            f"--object-manager-port={objects}",
            f"--metrics-export-port={metrics}",
            f"--dashboard-agent-listen-port={agent}",
            f"--dashboard-agent-grpc-port={agent_grpc}",
            f"--runtime-env-agent-port={runtime_env}",
            f"--min-worker-port={worker_low}",
            f"--max-worker-port={worker_low + _WORKER_PORTS}",
            "--num-cpus=2",
            "--num-gpus=0",
            "--object-store-memory=100000000",
            f"--temp-dir={self.temp_dir}",
            "--include-dashboard=true",
        ]
        env = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
        self._process.start(argv, env=env)
        self._process.wait_until(self._jobs_api_up, self.start_timeout_s)

    def stop(self) -> None:
        leader = self._process.pid()
        if leader is not None:
            # Ray's workers leave the head's process group but not its session: end the session.
            members = _session(leader)
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for pid in members:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, sig)
                deadline = time.monotonic() + 5
                while (members := _session(leader)) and time.monotonic() < deadline:
                    time.sleep(0.1)
                if not members:
                    break
            self._process.stop(timeout_s=1)
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def _jobs_api_up(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.address}/api/jobs/", timeout=1) as reply:
                return bool(reply.status == 200)
        except OSError:
            return False


def _session(sid: int) -> list[int]:
    """Live (non-zombie) processes of session `sid`."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            # Fields after the parenthesised name: state ppid pgrp session ...
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid and fields[0] != "Z":
                pids.append(int(stat.parent.name))
    return pids


@pytest.fixture(scope="session", name="ray_head")
def ray_head_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayHead]:
    head = RayHead(tmp_path_factory.mktemp("ray"))
    try:
        head.start()
        yield head
    finally:
        head.stop()


_WORKER_PORTS = 200


def _worker_range_clear_of(taken: list[int]) -> int:
    """A start for Ray's worker port range that holds none of the component ports: Ray refuses
    to start when they overlap, and separately drawn free ports sometimes did."""
    while True:
        low = free_port()
        if low + _WORKER_PORTS < 65535 and not any(low <= p <= low + _WORKER_PORTS for p in taken):
            return low
