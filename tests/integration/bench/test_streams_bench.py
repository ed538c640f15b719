"""`centrality bench streams`, small: the worker timed from its readiness over filled topics, beside
the raw loop, then probed for latency; the worker run from a checkout named by `--worker-from`
(how an older commit is compared in the same minutes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from centrality.stack.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
NODES, MINUTES, JOBS = 4, 5, 10
CHECKOUT = Path(__file__).resolve().parents[3]


def _bench(stack: Stack, *args: str) -> dict[str, Any]:
    cli = Path(sys.executable).with_name("centrality")
    workload = ("--nodes", str(NODES), "--minutes", str(MINUTES), "--jobs", str(JOBS))
    run = subprocess.run(
        [str(cli), "bench", "streams", *workload, *args, "--json"],
        env={**os.environ, **stack.env()},
        capture_output=True,
        timeout=280,
    )
    assert run.returncode == 0, run.stderr.decode()[-4000:]
    result: dict[str, Any] = orjson.loads(run.stdout.decode().strip().splitlines()[-1])
    return result


def test_the_worker_is_timed_from_ready_and_probed(stack: Stack) -> None:
    result = _bench(stack, "--latency-s", "2", "--worker-from", str(CHECKOUT))
    # Every filled event, each node's minute a heartbeat and 8 samples, and the jobs' events.
    assert result["events"] > NODES * MINUTES * 9, result
    assert result["messages"] > NODES * MINUTES * 2, result
    assert result["worker_from"] == str(CHECKOUT), result
    rate, raw, ratio = result["rate_eps"], result["raw_rate_eps"], result["ratio"]
    assert isinstance(rate, int) and isinstance(raw, int) and isinstance(ratio, float)
    assert rate > 0 and raw > 0 and ratio == pytest.approx(rate / raw, abs=0.002), result
    cpu = result["worker_cpu_us_per_event"]
    assert isinstance(cpu, float) and cpu > 0, result
    assert isinstance(result["worker_ready_s"], float) and result["worker_ready_s"] > 0, result
    assert 0 < result["worker_stop_s"] < 10, result  # SIGTERM to its end, within the stop limit
    # A probe every 50 ms for 2 s: each crashed job's exit restarted.
    assert result["probes"] == 40 and result["latency_p99_ms"] is not None, result


def test_a_latency_of_zero_skips_the_probe(stack: Stack) -> None:
    result = _bench(stack, "--latency-s", "0")
    assert result["probes"] == 0 and result["latency_p50_ms"] is None, result
    assert result["worker_from"] is None and result["rate_eps"] != 0, result
