"""`centrality bench incidents`, small: 200 agents fall silent and come back, then 40 of them raise
a fatal XID, through the three workers and the Slack fake; one run, read by each test. The
targets that do not depend on the machine's speed are asserted: one incident naming every node,
every node unreachable and then back, no drain, at most 3 messages for the silence; every XID
decided (drained or refused by the breaker), at most 10 messages for the burst, every Slack call
taken. The latency targets are for the benchmark on a quiet machine; a test shares it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from centrality.stack.stack import Stack

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(330),
    pytest.mark.xdist_group("bench_incidents"),  # one run for every test here
]
NODES, BURST = 200, 40
# Agents beating every 2 s, lost after 6 s, on a clock ticking every second; the burst's
# messages counted over 30 s (the bench's default: a minute).
FLEET = ("--nodes", str(NODES), "--interval-s", "2", "--limit-s", "6", "--tick-s", "1")
STORIES = ("--burst", str(BURST), "--burst-s", "5", "--slack-window-s", "30")
# Seen at f063364: the action worker's `notify` handler posts every Notify, also those a rule
# made about a node's story (`heartbeat_lost`'s "Node … lost", `quarantine_story`'s "Node … not
# quarantined: drain was refused"), which `told_by_incident` says its incident tells.


@pytest.fixture(scope="module")
def measured(stack: Stack) -> dict[str, Any]:
    cli = Path(sys.executable).with_name("centrality")
    run = subprocess.run(
        [str(cli), "bench", "incidents", *FLEET, *STORIES, "--phase-timeout-s", "90", "--json"],
        env={**os.environ, **stack.env()},
        capture_output=True,
        timeout=320,
    )
    lines = run.stdout.decode().strip().splitlines()
    assert lines, f"no result (exit {run.returncode}):\n{run.stderr.decode()[-4000:]}"
    result: dict[str, Any] = orjson.loads(lines[-1])
    assert run.returncode == (0 if result["ok"] else 1)
    return result


def test_a_silent_fleet_is_one_incident_naming_every_node_and_resolves_when_it_is_back(
    measured: dict[str, Any],
) -> None:
    silent = measured["silent"]
    assert silent["unreachable"] == silent["listed_unreachable"] == NODES, silent
    [incident] = silent["incidents_opened"].values()
    resolved = {"state": "resolved", "states": {"in_service": NODES}}
    assert incident == {"kind": "heartbeat_lost", "nodes": NODES, **resolved}, silent
    assert len(silent["listed_incidents_named"]) == 1 and silent["listed_heartbeat_lost"] == [NODES]
    assert silent["quarantines"] == 0 and silent["back_all"] and silent["nodes_lost_twice"] == 0
    for met in ("silent_one_incident", "silent_no_drain", "silent_back_and_resolved"):
        assert measured["targets"][met], met


def test_a_silent_fleet_is_told_in_at_most_three_messages(measured: dict[str, Any]) -> None:
    silent = measured["silent"]
    assert measured["targets"]["silent_messages"], silent["slack_said"]
    assert silent["slack"]["top_level"] == 1, silent["slack_said"]


def test_every_xid_of_a_burst_is_decided_drained_or_refused_by_the_breaker(
    measured: dict[str, Any],
) -> None:
    burst = measured["burst"]
    assert burst["xids"] == burst["xids_seen"] == burst["decided"] == BURST, burst
    # The breaker counts the nodes out at once: whether it trips depends on how fast the
    # (simulated, instant) benchmarks release the first ones, so either way is right here.
    assert burst["drained"] + burst["refused"] == BURST, burst
    assert all("circuit breaker" in words for words in burst["refusals"]), burst
    [incident] = burst["incidents_opened"].values()
    assert incident["kind"] == "xid:79" and incident["nodes"] == BURST, burst
    assert measured["targets"]["burst_every_xid_decided"]


def test_a_burst_is_told_in_at_most_ten_messages(measured: dict[str, Any]) -> None:
    burst = measured["burst"]
    assert measured["targets"]["burst_messages_first_window"], burst["slack_said"]


def test_slack_took_every_call_and_the_workers_are_measured(measured: dict[str, Any]) -> None:
    assert measured["targets"]["slack_every_call_taken"], measured["slack_refused"]
    assert measured["silent"]["slack"]["messages"] >= 1  # the incident's parent at least
    assert measured["burst"]["slack_in_window"]["messages"] >= 1
    for worker in ("streams", "actions", "sink"):
        figures = measured["workers"][worker]
        assert figures["cpu_percent"] > 0 and figures["rss_peak_mb"] > 0, measured
