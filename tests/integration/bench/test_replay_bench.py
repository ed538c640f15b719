"""`centrality bench replay`, small: a day written to ClickHouse, read back a page at a time by two
processes and re-decided, every decision of then reproduced."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from centrality.stack.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
NODES, JOBS = 3, 12
SAMPLES_PER_DAY = 24 * 3600 // 300  # every 5 min
EVENTS_PER_JOB = 8  # submitted, running, 3 checkpoints, log lines, its end signal, exit


def test_a_day_read_in_pages_is_re_decided_whole_and_the_same(stack: Stack) -> None:
    cli = Path(sys.executable).with_name("centrality")
    args = ["bench", "replay", "--nodes", str(NODES), "--jobs", str(JOBS), "--parts", "2", "--json"]
    run = subprocess.run(
        [str(cli), *args], env={**os.environ, **stack.env()}, capture_output=True, timeout=280
    )
    assert run.returncode == 0, run.stderr.decode()[-4000:]
    result = orjson.loads(run.stdout.decode().strip().splitlines()[-1])
    # Every fact of the day read once (no page boundary loses or repeats one): the telemetry,
    # the jobs, and each decision's two action results (started, succeeded).
    facts = NODES * SAMPLES_PER_DAY * 9 + JOBS * EVENTS_PER_JOB + 2 * result["decisions"]
    assert result["events"] == facts, result
    assert result["decisions"] > JOBS // 5 and result["same"] == result["decisions"], result
    assert result["parts"] == 2 and result["rate_eps"] > 0, result
    assert result["read_us_per_event"] > 0 and result["decide_us_per_event"] > 0, result
