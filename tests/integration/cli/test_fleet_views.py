"""What people read of the fleet, from the real status topic and history, through the real
`centrality` executable with its output in a pipe: one vocabulary (an operator's quarantine and
a v1 `held` record are both `quarantined`, who took them out a column), whole lines, `--tsv`,
counts per state, natural order, names that match nothing, `--watch` appending a line per
change, `node NAME` with one row per action, and a release of a node in service."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer

from centrality.bench.history_data import insert_events
from centrality.client import Fleet, WaitTimeout
from centrality.commands import command
from schemas.envelope import Event
from schemas.events import (
    ActionStarted,
    ActionSucceeded,
    JobStatusChanged,
    NodeStatusChanged,
    QuarantineNodes,
)
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name
from streams.history.client import connect
from streams.history.settings import ClickHouseSettings
from tests.support.operators import ALICE

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).with_name("centrality"))
NOW = datetime.now(UTC).replace(microsecond=0)
LONG_WHY = "Xid 79 (GPU has fallen off the bus) on GPU 3, " + "seen again " * 20


def status(name: str, state: str, **said: Any) -> NodeStatusChanged:
    return NodeStatusChanged(
        source="streams",
        cluster="a",
        subject=name,
        occurred_at=NOW,
        payload={"state": state, **said},
    )


def job(number: int, **said: Any) -> JobStatusChanged:
    return JobStatusChanged(
        source="streams", cluster="a", subject=f"slurm/a/{number}", occurred_at=NOW, payload=said
    )


async def tell(kafka: KafkaSettings, *events: Event) -> None:
    async with Emitter(kafka) as emitter:
        for event in events:
            await emitter.emit(event)


async def tell_v1_held(kafka: KafkaSettings) -> None:
    """What a streams app of v1 wrote for an operator's quarantine, still on the topic."""
    doc = {
        "event_id": "00000000-0000-0000-0000-0000000000a1",
        "type": "NodeStatusChanged",
        "schema_version": 1,
        "source": "streams",
        "cluster": "a",
        "subject": "gpu-node-3",
        "occurred_at": NOW.isoformat(),
        "observed_at": NOW.isoformat(),
        "payload": {"state": "held", "held_by": "bob", "decided_by": "operator/bob", "why": "fans"},
    }
    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(
            topic_name("status", kafka), orjson.dumps(doc), key=b"gpu-node-3"
        )
    finally:
        await producer.stop()


@pytest.fixture
def env(
    worker_env: dict[str, str],
    kafka_settings: KafkaSettings,
    clickhouse_settings: ClickHouseSettings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[dict[str, str]]:
    asyncio.run(
        tell(
            kafka_settings,
            status("gpu-node-10", "in_service", since=NOW),
            status("gpu-node-2", "in_service", since=NOW),
            status("gpu-node-1", "quarantined", since=NOW, by="operator/alice", why=LONG_WHY),
            status("gpu-node-4", "down", since=NOW, by="scheduler", why="not responding"),
            job(10, state="RUNNING", attempt=2, restarts_used=1, restarts_left=2),
            job(2, state="FAILED", attempt=1, restarts_used=1, restarts_left=2,
                pending="next attempt", pending_since=NOW - timedelta(minutes=5)),
            job(1, state="SUCCEEDED", attempt=1),
        )
    )  # fmt: skip
    asyncio.run(tell_v1_held(kafka_settings))
    drain = command(
        QuarantineNodes, operator="alice", cluster="a", subject="gpu-node-1",
        reason="flaky NVLink", nodes=("gpu-node-1",),
    ).model_copy(update={"occurred_at": NOW - timedelta(minutes=2)})  # fmt: skip
    head = {
        "trigger_id": drain.event_id,
        "trigger_type": "QuarantineNodes",
        "nodes": ("gpu-node-1",),
    }
    started = ActionStarted(
        source="actions", cluster="a", subject="gpu-node-1",
        occurred_at=NOW - timedelta(minutes=2), payload={**head, "action": "quarantine_nodes"},
    )  # fmt: skip
    done = ActionSucceeded(
        source="actions", cluster="a", subject="gpu-node-1",
        occurred_at=NOW - timedelta(seconds=100),
        payload={**head, "action": "quarantine_nodes",
                 "detail": {"drain": {"scheduler": "slurm", "drained": ["gpu-node-1"]}}},
    )  # fmt: skip
    with connect(clickhouse_settings) as client:
        insert_events(client, [drain, started, done])
    key = str(ALICE.save(tmp_path / "alice.key"))
    found = {**worker_env, "CENTRALITY_OPERATOR_KEY_FILE": key}
    for name, value in found.items():  # the Python client reads the same settings
        monkeypatch.setenv(name, value)
    yield found


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )


def test_one_vocabulary_whole_lines_and_names_that_match_nothing(env: dict[str, str]) -> None:
    listed = cli(env, "nodes", "--state", "quarantined")
    assert listed.returncode == 0, listed.stderr
    assert "2 nodes: 2 quarantined" in listed.stdout
    out = " ".join(listed.stdout.split())
    assert " ".join(LONG_WHY.split()) in out and "…" not in out  # a pipe gets it whole
    assert "operator/alice" in out and "operator/bob" in out and "fans" in out
    # The Python client reads the same: an operator's quarantine is quarantined.
    names = [s.subject for s in Fleet().nodes(state="quarantined")]
    assert names == ["gpu-node-1", "gpu-node-3"]
    with pytest.raises(WaitTimeout, match="node gpu-node-2 is in_service, not quarantined") as late:
        Fleet().node("gpu-node-2").wait("quarantined", timeout_s=1, poll_s=0.2)
    assert late.value.state == "in_service"

    tsv = cli(env, "nodes", "--out-of-service", "--tsv")
    assert tsv.returncode == 0, tsv.stderr
    header, *rows = [line.split("\t") for line in tsv.stdout.splitlines()]
    assert header[:5] == ["node", "cluster", "state", "by", "since"]
    assert [(r[0], r[2], r[3]) for r in rows] == [
        ("gpu-node-1", "quarantined", "operator/alice"),
        ("gpu-node-3", "quarantined", "operator/bob"),
        ("gpu-node-4", "down", "scheduler"),
    ]
    zoned = NOW.isoformat().replace("+00:00", "Z")
    assert [r[4] for r in rows] == [zoned, "-", zoned]  # the v1 record said no since

    every = cli(env, "nodes", "--tsv", "--sort", "node")
    assert [r.split("\t")[0] for r in every.stdout.splitlines()[1:]] == [
        "gpu-node-1", "gpu-node-2", "gpu-node-3", "gpu-node-4", "gpu-node-10",
    ]  # fmt: skip
    jobs = cli(env, "jobs", "--tsv")
    rows = [r.split("\t") for r in jobs.stdout.splitlines()[1:]]
    assert [r[0] for r in rows] == ["slurm/a/1", "slurm/a/2", "slurm/a/10"]
    assert rows[1][5:7] == ["1 used, 2 left", "next attempt since " + (
        (NOW - timedelta(minutes=5)).isoformat().replace("+00:00", "Z")
    )]  # fmt: skip

    nothing = cli(env, "nodes", "node-2")
    assert nothing.returncode == 2 and "did you mean gpu-node-2" in nothing.stderr
    some = cli(env, "nodes", "gpu-node-[1-2,7]", "--tsv")
    assert some.returncode == 0 and "not known: gpu-node-7" in some.stderr
    assert len(some.stdout.splitlines()) == 3


def test_one_node_in_full_tells_each_action_once(env: dict[str, str]) -> None:
    shown = cli(env, "node", "gpu-node-1")
    assert shown.returncode == 0, shown.stderr
    fields = dict(line.split(maxsplit=1) for line in shown.stdout.splitlines()[1:6])
    assert (fields["state"].strip(), fields["by"].strip()) == ("quarantined", "operator/alice")
    assert fields["since"].strip() == NOW.isoformat().replace("+00:00", "Z")
    [row] = [line for line in shown.stdout.splitlines() if "QuarantineNodes" in line]
    assert "flaky NVLink" in row
    assert "succeeded: drain.scheduler=slurm, drain.drained=gpu-node-1" in row
    assert "decisions and actions (1)" in shown.stdout
    assert "()" not in shown.stdout and "('" not in shown.stdout


def test_a_release_of_a_node_in_service_says_so_and_sends_nothing(env: dict[str, str]) -> None:
    freed = cli(env, "release", "gpu-node-2", "--reason", "just in case", "--wait-s", "1")
    assert freed.returncode == 0, freed.stderr
    assert "release gpu-node-2: unchanged (gpu-node-2 was in service: nothing to release)" in (
        freed.stdout
    )


def test_watch_into_a_pipe_appends_one_line_per_change(
    env: dict[str, str], kafka_settings: KafkaSettings
) -> None:
    watching = subprocess.Popen(
        [CLI, "nodes", "--watch", "--state", "quarantined"],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert watching.stdout is not None
        first = [watching.stdout.readline() for _ in range(3)]
        assert first[0].startswith("node\tcluster\tstate\tby")
        assert [line.split("\t")[0] for line in first[1:]] == ["gpu-node-1", "gpu-node-3"]
        asyncio.run(tell(kafka_settings, status("gpu-node-2", "quarantined", by="fatal_xid")))
        line = watching.stdout.readline().split("\t")
        assert line[:4] == ["gpu-node-2", "a", "quarantined", "fatal_xid"]
        asyncio.run(tell(kafka_settings, status("gpu-node-2", "in_service")))
        left = watching.stdout.readline().split("\t")  # where it went, though no longer selected
        assert left[:3] == ["gpu-node-2", "a", "in_service"]
    finally:
        watching.terminate()
        watching.wait(timeout=30)
