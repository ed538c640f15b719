"""Incidents on the real worker: a fleet that falls silent is one incident with every node in it,
every node `unreachable` and naming it, listed by `centrality incidents --json`; heartbeats that
resume bring the nodes back by themselves and resolve it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from collectors.events import Stamp
from schemas.runtime.fleet import Fleet, Incidents, read_fleet, read_incidents
from schemas.runtime.settings import KafkaSettings
from tests.integration.streams.worker import emit, heartbeat, ticking_worker

pytestmark = pytest.mark.integration

NODES = 120
LIMIT_S = 4.0  # heartbeat_lost's limit here
STAMP = Stamp(source="it/agent", cluster="it")


def wait_for(
    read: Callable[[], Any],
    done: Callable[[Any], bool],
    timeout_s: float,
    check: Callable[[], None],
) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        seen = read()
        if done(seen) or time.monotonic() > deadline:
            return seen
        check()
        time.sleep(0.5)


def unreachable(fleet: Fleet, names: set[str]) -> set[str]:
    return {n for n in names if (s := fleet.nodes.get(n)) and s.payload.state == "unreachable"}


def test_a_silent_fleet_is_one_incident_and_comes_back_by_itself(
    kafka_settings: KafkaSettings, worker_env: dict[str, str], unique: str, tmp_path: Path
) -> None:
    names = {f"n{i:04d}-{unique}" for i in range(NODES)}
    worker = ticking_worker(worker_env, tmp_path / "run", LIMIT_S)
    worker.start()
    try:
        asyncio.run(emit(kafka_settings, [heartbeat(STAMP, n, 1.0) for n in sorted(names)]))
        fleet = wait_for(
            lambda: asyncio.run(read_fleet(kafka_settings)),
            # Unreachable, and told which incident they joined (the book answers after).
            lambda f: (
                unreachable(f, names) == names
                and None not in {f.nodes[n].payload.incident for n in names}
            ),
            90,
            worker.check,
        )
        assert unreachable(fleet, names) == names, f"{len(unreachable(fleet, names))} unreachable"
        named = {fleet.nodes[n].payload.incident for n in names}
        assert len(named) == 1 and None not in named
        [incident_id] = named
        listed = subprocess.run(
            [str(Path(sys.executable).with_name("centrality")), "incidents", "--json"],
            env={**os.environ, **worker_env},
            capture_output=True,
            text=True,
            check=True,
        )
        [doc] = json.loads(listed.stdout)
        assert doc["incident"] == incident_id and doc["kind"] == "heartbeat_lost"
        assert doc["nodes_count"] == NODES and doc["states"] == {"unreachable": NODES}
        assert doc["state"] == "open" and doc["title"].startswith(f"{NODES} nodes")

        # Back, each saying it beats every minute: not lost again while the test reads.
        asyncio.run(emit(kafka_settings, [heartbeat(STAMP, n, 60.0) for n in sorted(names)]))
        incidents: Incidents = wait_for(
            lambda: asyncio.run(read_incidents(kafka_settings)),
            lambda i: i.incidents[incident_id].payload.state == "resolved",
            60,
            worker.check,
        )
        fleet = asyncio.run(read_fleet(kafka_settings))
    finally:
        worker.stop()
    resolved = incidents.incidents[incident_id].payload
    assert resolved.state == "resolved" and resolved.states == {"in_service": NODES}
    assert {fleet.nodes[n].payload.state for n in names} == {"in_service"}
    assert {fleet.nodes[n].payload.incident for n in names} == {None}
