"""`centrality bench hostile`, small: the three workers survive a storm of every hostile kind on
every topic and codec, keep deciding, ignore unsigned triggers and stop on SIGTERM in time."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from centrality.bench.hostile_send import CODECS
from centrality.bench.hostile_storm import registered
from centrality.stack.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
MESSAGES = 3000
# Short enough to report within the test's time when a worker wedges.
ARGS = ("--json", "--stall-s", "30", "--story-timeout-s", "20", "--timeout-s", "150")


def test_workers_survive_a_hostile_storm_and_keep_deciding(stack: Stack) -> None:
    cli = Path(sys.executable).with_name("centrality")
    run = subprocess.run(
        [str(cli), "bench", "hostile", "--messages", str(MESSAGES), *ARGS],
        env={**os.environ, **stack.env()},
        capture_output=True,
        timeout=280,
    )
    lines = run.stdout.decode().strip().splitlines()
    assert lines, f"no result (exit {run.returncode}):\n{run.stderr.decode()[-4000:]}"
    result = orjson.loads(lines[-1])
    failed = [name for name, met in result["targets"].items() if not met]
    assert not failed and run.returncode == 0, (
        f"targets missed: {failed}\n{lines[-1]}\n{run.stderr.decode()[-4000:]}"
    )

    sent = result["sent"]
    assert sent["total"] + sum(sent["refused"].values()) == MESSAGES
    assert set(sent["by_kind"]) == set(registered())
    assert set(sent["by_codec"]) == set(CODECS)
    assert set(result["dead_letters_by_worker"]) == {"streams", "actions", "sink"}
    assert result["unsigned_sent"] > 0 and result["unsigned_obeyed"] == 0
    assert result["story_restart_seen"] and result["story_decided_s"] is not None
    assert all(mb and mb > 0 for mb in result["peak_rss_mb"].values())
    # Each worker read part of the storm (the sink every topic), and it cost each some CPU.
    read = result["storm_read"]
    assert 0 < read["streams"] < read["sink"] and 0 < read["actions"] < read["sink"]
    assert all(ms is not None and ms > 0 for ms in result["storm_cpu_ms_per_message"].values())
    assert all(s is not None and s <= 10 for s in result["stop_s"].values())
