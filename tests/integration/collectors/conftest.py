"""The real schedulers the watchers are tested against, from tests/support, plus a Ray worker
node to kill (the support module gives a head only)."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from centrality.stack.process import ManagedProcess
from tests.support.kube import kube_fixture  # noqa: F401
from tests.support.ray import RayHead, ray_head_fixture  # noqa: F401
from tests.support.slurm import free_port, slurm_cluster_fixture  # noqa: F401


class RayWorker:
    """One more raylet joined to the head, as its own process group, so it can die alone."""

    def __init__(self, head: RayHead, run_dir: Path) -> None:
        self.head = head
        self.process = ManagedProcess("ray-worker", run_dir)
        self.resource = f"centrality_worker_{os.getpid()}"

    def start(self) -> None:
        gcs = (self.head.temp_dir / "ray_current_cluster").read_text().strip()
        low = free_port()
        argv = [str(Path(sys.executable).parent / "ray"), "start", "--block", f"--address={gcs}"]
        argv += ["--node-ip-address=127.0.0.1", "--num-cpus=1", "--disable-usage-stats"]
        argv += [f'--resources={{"{self.resource}": 1}}']
        argv += [f"--node-manager-port={free_port()}", f"--object-manager-port={free_port()}"]
        argv += [f"--metrics-export-port={free_port()}", f"--runtime-env-agent-port={free_port()}"]
        argv += [f"--dashboard-agent-listen-port={free_port()}"]
        argv += [f"--dashboard-agent-grpc-port={free_port()}"]
        argv += [f"--min-worker-port={low}", f"--max-worker-port={low + 50}"]
        argv += ["--object-store-memory=80000000"]
        env = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
        self.process.start(argv, env=env)

    def kill(self) -> None:
        pid = self.process.pid()
        if pid is not None:
            os.killpg(pid, signal.SIGTERM)
            deadline = time.monotonic() + 15
            while self.process.pid() is not None and time.monotonic() < deadline:
                time.sleep(0.2)
        self.process.stop(timeout_s=5)


@pytest.fixture
def ray_worker(ray_head: RayHead, tmp_path: Path) -> Iterator[RayWorker]:
    worker = RayWorker(ray_head, tmp_path)
    worker.start()
    try:
        yield worker
    finally:
        worker.kill()
