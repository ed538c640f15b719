"""Replay from Kafka offset ranges, and the warm-up that decides a straddling window as live."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.structs import RecordMetadata
from typer.testing import CliRunner

from centrality.bench.history_data import insert_events, with_decisions
from centrality.cli import app
from schemas.codec import encode
from schemas.envelope import Event
from schemas.events import JobExited, QuarantineNodes, RestartJob, Trigger
from schemas.runtime.settings import KafkaSettings
from schemas.topics import partition_count, topic_name
from streams.history.client import connect
from streams.history.settings import ClickHouseSettings
from streams.testing import T0, heartbeat, xid
from tests.integration.history.conftest import Seeded
from tests.support import foreign
from tests.support.placed import on_partition_of

runner = CliRunner()
JOB = "slurm/sim/77"


@pytest.fixture(autouse=True)
def topic_prefix(
    cli_env: None, kafka_settings: KafkaSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CENTRALITY_KAFKA_TOPIC_PREFIX", kafka_settings.topic_prefix)


def replay(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["replay", *args, "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = orjson.loads(result.stdout)
    return doc


def statuses(doc: dict[str, Any]) -> dict[str, str]:
    return {d["trigger_id"]: d["status"] for d in doc["decisions"]}


async def produce(
    settings: KafkaSettings,
    events: Sequence[Event],
    garbage_key: bytes | None = None,
    astray: Event | None = None,
) -> dict[str, RecordMetadata]:
    """Each event to its catalog topic, keyed as live; optionally one undecodable jobs message
    and one event on the jobs topic that belongs on another (`astray`)."""
    producer = AIOKafkaProducer(bootstrap_servers=settings.bootstrap, linger_ms=5)
    await producer.start()
    try:
        sent = [
            (e, await producer.send(topic_name(e.topic, settings), encode(e), key=e.key))
            for e in events
        ]
        if garbage_key is not None:
            await producer.send(topic_name("jobs", settings), b"{not json", key=garbage_key)
        if astray is not None:
            await producer.send(topic_name("jobs", settings), encode(astray), key=astray.key)
        return {str(e.event_id): await future for e, future in sent}
    finally:
        await producer.stop()


async def whole_topics(settings: KafkaSettings, topics: Sequence[str]) -> list[str]:
    """`--kafka` ranges covering every record of these catalog topics."""
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.bootstrap)
    await consumer.start()
    try:
        tps = [TopicPartition(topic_name(t, settings), p) for t in topics for p in range(4)]
        ends = await consumer.end_offsets(tps)
    finally:
        await consumer.stop()
    prefix = settings.topic_prefix
    return [
        f"{tp.topic.removeprefix(prefix)}:{tp.partition}:0-{ends[tp]}" for tp in tps if ends[tp]
    ]


def kafka_args(ranges: Sequence[str]) -> list[str]:
    return [arg for r in ranges for arg in ("--kafka", r)]


def test_kafka_ranges_replay_like_clickhouse(seeded: Seeded, kafka_settings: KafkaSettings) -> None:
    assert partition_count("jobs") == 4
    # A fatal XID on the jobs topic: the live worker dead-letters it (wrong-topic); folded, it
    # would quarantine its node, a decision no one took.
    astray = xid("n-astray", 79, at_s=seeded.events[-1].occurred_at.timestamp() - T0.timestamp())
    asyncio.run(
        produce(kafka_settings, seeded.events, garbage_key=b"slurm/sim/1001", astray=astray)
    )
    ranges = asyncio.run(whole_topics(kafka_settings, ["jobs", "logs", "nodes", "gpu", "actions"]))
    args = kafka_args(ranges)

    doc = replay(*args)
    assert doc["source"] == "kafka"
    assert doc["undecodable"] == {"malformed": 1, "wrong-topic": 1}
    inputs = [e for e in seeded.events if not isinstance(e, Trigger)]
    assert doc["events"] == len(inputs)
    assert statuses(doc) == {str(t.event_id): "same" for t in seeded.triggers}
    # The same decisions as from ClickHouse, and the same output every time.
    from_clickhouse = replay("--since", "1h")
    assert statuses(from_clickhouse) == statuses(doc)
    assert replay(*args) == doc
    table = runner.invoke(app, ["replay", *args])
    assert (
        "from kafka" in table.output and "undecodable messages skipped: 1 malformed" in table.output
    )

    [restart] = [t for t in seeded.triggers if isinstance(t, RestartJob)]
    chain = replay(*args, "--explain", str(restart.event_id))
    [cause] = chain["causes"]
    assert cause["event"]["type"] == "JobExited" and cause["event"]["subject"] == restart.subject
    assert [r["type"] for r in chain["results"]] == ["ActionStarted", "ActionSucceeded"]

    one_job = replay(*args, "--job", "slurm/sim/1001")
    assert {d["subject"] for d in one_job["decisions"]} == {"slurm/sim/1001"}
    assert set(statuses(one_job).values()) == {"same"}
    redriven = runner.invoke(app, ["replay", *args, "--job", "slurm/sim/1001", "--into", "x"])
    job_inputs = [e for e in inputs if e.subject == "slurm/sim/1001"]
    assert f"re-drove {len(job_inputs)} events into x" in redriven.output


def test_bad_offsets_are_refused(kafka_settings: KafkaSettings) -> None:
    beyond = runner.invoke(app, ["replay", "--kafka", "jobs:0:0-10"])
    assert beyond.exit_code == 2 and "holds offsets 0-0" in beyond.output
    mixed = runner.invoke(app, ["replay", "--kafka", "jobs:0:0-10", "--since", "1h"])
    assert mixed.exit_code == 2
    assert runner.invoke(app, ["replay", "--kafka", "deadletter:0:0-1"]).exit_code == 2


def straddling(now: datetime) -> list[Event]:
    """Five failures of a job on the same nodes in one hour window, with their decisions."""
    hour = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    exits = [
        JobExited(
            source="sim",
            cluster="sim",
            subject=JOB,
            occurred_at=hour + timedelta(minutes=5 + 5 * i),
            payload={"state": "FAILED", "exit_code": 1, "attempt": i, "nodes": ["n-1", "n-2"]},
        )
        for i in range(1, 6)
    ]
    return with_decisions(exits)


@pytest.mark.parametrize("source", ["clickhouse", "kafka"])
def test_warmup_decides_a_window_straddling_the_start_as_live(
    source: str, kafka_settings: KafkaSettings, clickhouse_settings: ClickHouseSettings
) -> None:
    events = straddling(datetime.now(UTC))
    exits = [e for e in events if isinstance(e, JobExited)]
    fifth = exits[4]
    quarantine = {str(t.event_id) for t in events if isinstance(t, Trigger)}
    quarantine -= {str(t.event_id) for t in events if isinstance(t, RestartJob)}
    # the drain request and the notice (the benchmark waits for the drain's outcome)
    assert any(isinstance(t, QuarantineNodes) for t in events) and len(quarantine) == 2
    if source == "clickhouse":
        with connect(clickhouse_settings) as client:
            insert_events(client, events)
        start = fifth.occurred_at - timedelta(minutes=2)
        args = [
            "--since",
            start.isoformat(),
            "--until",
            (start + timedelta(minutes=10)).isoformat(),
        ]
    else:
        sent = asyncio.run(produce(kafka_settings, events))
        at = sent[str(fifth.event_id)]
        args = ["--kafka", f"jobs:{at.partition}:{at.offset}-{at.offset + 1}"]

    warm = replay(*args)
    assert warm["warmup_events"] >= 4
    # The window's decisions, as live made them; the warm-up's restarts are not shown.
    assert statuses(warm) == {tid: "same" for tid in quarantine}
    cold = replay(*args, "--warmup-s", "0")
    assert cold["warmup_events"] == 0
    assert statuses(cold) == {tid: "missing" for tid in quarantine}


def test_an_aborted_transaction_is_not_replayed(kafka_settings: KafkaSettings, unique: str) -> None:
    """A foreign transactional producer aborted a fatal XID, then committed a heartbeat: replay
    folds the heartbeat only (read live, the XID never happened), and reads the range to its end
    though its last offset is the commit marker, no record."""
    at_s = datetime.now(UTC).timestamp() - T0.timestamp()
    committed = heartbeat("n-1", at_s=at_s)
    # On the heartbeat's partition, keyed as live.
    aborted = xid(on_partition_of(committed.subject, f"n-aborted-{unique}"), 79, at_s=at_s)
    foreign.produce_transactions(
        kafka_settings,
        f"it-{unique}",
        [
            (False, [(aborted.topic, aborted.key, encode(aborted))]),
            (True, [(committed.topic, committed.key, encode(committed))]),
        ],
    )
    [span] = asyncio.run(whole_topics(kafka_settings, ["nodes"]))
    assert span.endswith("-4")  # the XID, its abort marker, the heartbeat, its commit marker
    doc = replay(*kafka_args([span]))
    assert doc["events"] == 1 and doc["decisions"] == [], doc
