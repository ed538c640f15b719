"""`centrality bench goodput --slow-nodes`, small: a few hours of a small fleet with slow nodes,
through the workers under three `slow_node` policies (as configured, draining at once, leaving
the node), GPU-hours lost per world out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from centrality.stack.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_acting_on_a_slow_node_loses_less_than_leaving_it(stack: Stack) -> None:
    cli = Path(sys.executable).with_name("centrality")
    # Seed 8's spells: one of 4.9 h at a step x1.68 under a running job from 0.4 h, three of
    # minutes (tests/unit/bench/test_goodput_slow.py measures the accounting itself).
    args = ["bench", "goodput", "--nodes", "8", "--jobs", "2", "--hours", "6"]
    args += ["--interval-s", "600", "--interruptions", "2", "--slow-nodes", "4", "--seed", "8"]
    run = subprocess.run(
        [str(cli), *args, "--json"],
        env={**os.environ, **stack.env()},
        capture_output=True,
        timeout=280,
    )
    assert run.returncode == 0, run.stderr.decode()[-4000:]
    result = orjson.loads(run.stdout.decode().strip().splitlines()[-1])
    assert {"auto", "manual"} <= result.keys()  # the other fleets ran as ever
    slow = result["slow_nodes"]
    assert len(slow["spells"]) == 4 and max(s["hours"] for s in slow["spells"]) > 4
    timed, now, left = slow["timed"], slow["now"], slow["left"]
    # Left alone: nothing moved, nothing asked, and the slow node cost its job.
    assert left["jobs_moved"] == left["checkpoints_asked"] == 0
    assert left["slow_lost_gpu_h"] > 0
    # Drained at once: the job moved off the slow node, taken out while it was slow.
    assert now["jobs_moved"] > 0 and now["checkpoints_asked"] == 0
    assert now["slow_lost_gpu_h"] < left["slow_lost_gpu_h"]
    assert now["precision"]["slow_node"]["right"] > 0
    # As configured: it acted on the long spell, and lost less than leaving the node.
    assert timed["jobs_moved"] > 0
    assert slow["saved_vs_left_gpu_h"] > 0
    assert timed["ettr"] > left["ettr"]
    lost = {n: slow[n]["lost_gpu_h"] + slow[n]["open_gpu_h"] for n in ("timed", "now", "left")}
    assert slow["saved_vs_now_gpu_h"] == round(lost["now"] - lost["timed"], 1)
    assert result["workers_late"] == 0
