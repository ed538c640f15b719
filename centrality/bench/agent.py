"""`centrality bench agent`: the node agent's CPU share and RSS at 1 s sampling of its GPUs.

The agent runs as its own process, exactly as on a node (`centrality agent`, built-in health
checks plus one executable check), on 8 fake GPUs or, with `--backend nvml`, on the real GPUs the
driver shows; after a warm-up its CPU time and RSS are read from /proc. By default it sends to
Kafka (`CENTRALITY_KAFKA_*`); `--dry-run` counts instead.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Literal

import orjson
import typer
from rich.console import Console
from rich.table import Table

from centrality.bench.cli import bench_app
from centrality.bench.run import delete_topics
from schemas.runtime.admin import ensure_topics
from schemas.runtime.settings import KafkaSettings

_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime + stime


def _rss_mb(pid: int) -> float:
    pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    return pages * _PAGE / 2**20


def _nvml_gpus() -> int:
    import pynvml

    pynvml.nvmlInit()
    try:
        return int(pynvml.nvmlDeviceGetCount())
    finally:
        pynvml.nvmlShutdown()


def _bench_topics() -> KafkaSettings:
    """Topics of the benchmark's own, whatever prefix the user's are named with: its samples
    must never reach the user's history."""
    settings = KafkaSettings().model_copy(
        update={"topic_prefix": f"bench-agent-{uuid.uuid4().hex[:8]}."}
    )
    asyncio.run(ensure_topics(settings))
    return settings


@bench_app.command("agent")
def bench_agent(
    duration_s: float = typer.Option(60.0, help="Measured time, after the warm-up."),
    warmup_s: float = typer.Option(5.0, help="Not measured: imports, connecting, first checks."),
    backend: Literal["fake", "nvml"] = typer.Option(
        "fake", help="fake, or nvml: this node's GPUs."
    ),
    gpus: int = typer.Option(8, help="Fake GPUs (with nvml: the driver's count)."),
    interval_s: float = typer.Option(1.0, help="Sampling interval."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Count events instead of Kafka."),
    json: bool = typer.Option(False, "--json", help="Print one JSON line."),
) -> None:
    """CPU % of one core and RSS of the node agent; budget ≤ 1% and ≤ 80 MB."""
    with tempfile.TemporaryDirectory() as checks_dir:
        check = Path(checks_dir) / "ib_port.sh"
        check.write_text("#!/bin/sh\necho ib0 up\n")
        check.chmod(0o755)
        argv = [sys.executable, "-m", "centrality.cli", "agent", "--backend", backend]
        argv += ["--fake-gpus", str(gpus), "--interval-s", str(interval_s)]
        argv += ["--checks-dir", checks_dir, *(["--dry-run"] if dry_run else [])]
        env = {**os.environ, "CENTRALITY_AGENT_EXEC_INTERVAL_S": "10"}
        topics = None if dry_run else _bench_topics()
        if topics is not None:
            env["CENTRALITY_KAFKA_TOPIC_PREFIX"] = topics.topic_prefix
        proc = subprocess.Popen(argv, env=env, stderr=subprocess.DEVNULL)
        try:
            time.sleep(warmup_s)
            if proc.poll() is not None:
                raise RuntimeError(f"the agent exited early ({proc.returncode})")
            cpu0, t0 = _cpu_s(proc.pid), time.monotonic()
            time.sleep(duration_s)
            cpu1, t1 = _cpu_s(proc.pid), time.monotonic()
            rss = _rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(10)
            if topics is not None:
                asyncio.run(delete_topics(topics))
    result = {
        "cpu_pct": round(100 * (cpu1 - cpu0) / (t1 - t0), 3),
        "rss_mb": round(rss, 1),
        "backend": backend,
        "gpus": gpus if backend == "fake" else _nvml_gpus(),
        "interval_s": interval_s,
        "duration_s": duration_s,
        "sink": "dry-run" if dry_run else "kafka",
        "budget": {"cpu_pct": 1.0, "rss_mb": 80.0},
    }
    if json:
        print(orjson.dumps(result).decode())
        return
    table = Table("metric", "value", "budget")
    table.add_row("CPU (% of one core)", f"{result['cpu_pct']:.3f}", "≤ 1")
    table.add_row("RSS (MB)", f"{result['rss_mb']:.1f}", "≤ 80")
    Console().print(table)
