"""After a simulated incident: the node's story, replay reproduces the decisions, --explain."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import orjson
import pytest
from aiokafka import AIOKafkaConsumer
from typer.testing import CliRunner

from centrality.bench.history_data import insert_events
from centrality.cli import app
from centrality.commands import command
from schemas.codec import decode
from schemas.envelope import Event
from schemas.events import JobExited, NodeStatusChanged, QuarantineNodes, RestartJob, Trigger
from schemas.runtime.settings import KafkaSettings
from streams.history.client import connect
from streams.history.query import status_before
from streams.history.settings import ClickHouseSettings
from tests.integration.history.conftest import Seeded

pytestmark = pytest.mark.usefixtures("cli_env")
runner = CliRunner()


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_history_node_tells_the_story(seeded: Seeded) -> None:
    doc = orjson.loads(invoke("history", "node", seeded.node, "--since", "2h", "--json"))
    types = [e["type"] for e in doc]
    # Symptoms on the node, the crashed job that ran there, the decision and the action, in order.
    for want in (
        "GpuXidObserved",
        "NodeHealthChecked",
        "JobExited",
        "RestartJob",
        "ActionStarted",
        "ActionSucceeded",
        "BenchmarkCompleted",
    ):
        assert want in types, want
    assert types.index("GpuXidObserved") < types.index("JobExited") < types.index("RestartJob")
    [restart] = [i for i, e in enumerate(doc) if e["type"] == "RestartJob"]
    acted = [
        i
        for i, e in enumerate(doc)
        if e["type"] == "ActionSucceeded" and e["payload"]["trigger_id"] == doc[restart]["event_id"]
    ]
    assert len(acted) == 1 and acted[0] > restart
    assert "GpuSampled" not in types  # telemetry only with --all
    assert [e["occurred_at"] for e in doc] == sorted(e["occurred_at"] for e in doc)
    # The other job never touched the node.
    assert all(e["subject"] != "slurm/sim/1002" for e in doc)
    table = invoke("history", "node", seeded.node, "--since", "2h")
    assert "RestartJob" in table and "restart_incomplete_exit" in table

    job = orjson.loads(invoke("history", "job", "slurm/sim/1001", "--json"))
    assert {e["subject"] for e in job} == {"slurm/sim/1001"}
    assert "RestartJob" in {e["type"] for e in job}


def test_replay_reproduces_the_decisions_and_is_deterministic(seeded: Seeded) -> None:
    args = ("replay", "--since", "1h", "--node", seeded.node, "--json")
    first = orjson.loads(invoke(*args))
    [restart] = [t for t in seeded.triggers if isinstance(t, RestartJob)]
    statuses = {d["trigger_id"]: d["status"] for d in first["decisions"]}
    assert set(statuses.values()) == {"same"}
    assert str(restart.event_id) in statuses
    assert set(statuses) <= {str(t.event_id) for t in seeded.triggers}
    until = first["until"]
    again = invoke(
        "replay", "--since", first["since"], "--until", until, "--node", seeded.node, "--json"
    )
    fixed = invoke(
        "replay", "--since", first["since"], "--until", until, "--node", seeded.node, "--json"
    )
    assert again == fixed
    everything = orjson.loads(invoke("replay", "--since", "1h", "--json"))
    assert {d["trigger_id"]: d["status"] for d in everything["decisions"]} == {
        str(t.event_id): "same" for t in seeded.triggers
    }
    assert "same" in invoke("replay", "--since", "1h")


def test_replay_names_each_decision_it_cannot_reproduce(
    seeded: Seeded, clickhouse_settings: ClickHouseSettings
) -> None:
    order = command(
        QuarantineNodes,
        operator="alice",
        cluster="sim",
        subject="n-08",
        reason="fans loud",
        nodes=("n-08",),
    ).model_copy(update={"occurred_at": seeded.now - timedelta(minutes=10)})
    with connect(clickhouse_settings) as client:
        insert_events(client, [order])
    doc = orjson.loads(invoke("replay", "--since", "1h", "--json"))
    named = {d["trigger_id"]: d for d in doc["decisions"] if d["status"] != "same"}
    assert list(named) == [str(order.event_id)]
    assert named[str(order.event_id)]["why"]["reason"] == "operator"
    assert doc["not_reproduced"] == {"operator": 1}
    assert doc["reproduced"] == len(seeded.triggers)
    table = invoke("replay", "--since", "1h")
    assert f"{len(seeded.triggers)} of {len(seeded.triggers) + 1} decisions reproduced" in table
    assert "not reproduced: 1 operator" in table
    # What the live worker showed of a node is read back as it was before an instant.
    shown = NodeStatusChanged(
        source="streams",
        cluster="sim",
        subject="n-08",
        occurred_at=seeded.now - timedelta(hours=3),
        payload={"state": "quarantined", "episodes": 2, "by": "operator/alice"},
    )
    with connect(clickhouse_settings) as client:
        insert_events(client, [shown])
    [(at, status)] = status_before(clickhouse_settings, ["n-08", "n-07"], seeded.now).items()
    assert at == "n-08" and status == (shown.occurred_at, shown.payload.model_dump(mode="json"))


def test_explain_shows_the_chain_and_the_actions(seeded: Seeded) -> None:
    [restart] = [t for t in seeded.triggers if isinstance(t, RestartJob)]
    doc = orjson.loads(
        invoke("replay", "--since", "1h", "--explain", str(restart.event_id), "--json")
    )
    assert doc["trigger"]["event_id"] == str(restart.event_id)
    [cause] = doc["causes"]
    exited = next(
        e for e in seeded.events if isinstance(e, JobExited) and e.subject == restart.subject
    )
    assert cause["event"]["event_id"] == str(exited.event_id)
    assert cause["event"]["payload"]["state"] == "FAILED"
    assert [r["type"] for r in doc["results"]] == ["ActionStarted", "ActionSucceeded"]
    text = invoke("replay", "--since", "1h", "--explain", str(restart.event_id))
    assert "caused by" in text and "JobExited" in text and "ActionSucceeded" in text
    unknown = runner.invoke(app, ["replay", "--explain", "00000000-0000-0000-0000-000000000000"])
    assert unknown.exit_code == 2  # an unknown id is the user's mistake
    [line] = unknown.stderr.strip().splitlines()
    assert line.startswith("error: no trigger 00000000-") and "check the id" in line


def test_history_of_an_unknown_subject_is_one_line_and_exit_2(seeded: Seeded) -> None:
    result = runner.invoke(app, ["history", "job", "slurm/sim/no-such-job", "--json"])
    assert result.exit_code == 2 and result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert "no events for job 'slurm/sim/no-such-job'" in line and "widen --since" in line


def test_replay_into_redrives_the_events_keyed(
    seeded: Seeded, kafka_settings: KafkaSettings, unique: str
) -> None:
    topic = f"replay-{unique}"
    invoke("replay", "--since", "1h", "--job", "slurm/sim/1001", "--into", topic)
    inputs = [
        e for e in seeded.events if e.subject == "slurm/sim/1001" and not isinstance(e, Trigger)
    ]
    # Every input event of the job (its action results too), none of the triggers, keyed.
    records = asyncio.run(read_keyed(kafka_settings, topic))
    assert sorted(str(e.event_id) for _, e in records) == sorted(str(e.event_id) for e in inputs)
    assert {k for k, _ in records} == {b"slurm/sim/1001"}


async def read_keyed(settings: KafkaSettings, topic: str) -> list[tuple[bytes, Event]]:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=settings.bootstrap, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        out: list[tuple[bytes, Event]] = []
        for _ in range(20):
            for records in (await consumer.getmany(timeout_ms=500)).values():
                out += [(r.key or b"", e) for r in records for e in decode(r.value or b"")]
        return out
    finally:
        await consumer.stop()
