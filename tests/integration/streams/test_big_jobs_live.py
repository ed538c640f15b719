"""Rules that hold for big jobs (issue 28), on the real streams worker, action worker and broker:
a 2,000-node job failing five times, one node with an XID, one with a failed health check and
one named by another node's NCCL error as the failing peer. What comes out of the triggers
topic parses and drains only those three, two at a time (their batch): each is drained,
benchmarked and released, the third only once one of the first two was benchmarked. Nothing is
dead-lettered, and `centrality replay` over the same Kafka offsets decides the same."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from actions.adapters.memory import InMemoryAdapter
from centrality.cli import app
from centrality.slack_fake import SlackFake
from schemas.envelope import Event, utcnow
from schemas.events import ActionSucceeded, Notify, QuarantineNodes
from schemas.limits import TEXT
from schemas.runtime.settings import KafkaSettings
from streams.testing import T0
from tests.integration.history.test_replay_kafka import kafka_args, whole_topics
from tests.integration.streams.test_hostile_input import dead_letters
from tests.integration.streams.test_streams_worker import oracle
from tests.integration.streams.worker import StreamsWorker, emit, triggers_sent
from tests.support.action_worker import wait_for, worker
from tests.unit.streams.test_big_jobs import BIG, SUSPECTS, failing_five_times

BATCH = 2
RULE = "repeated_failures_on_node_set"
RULES = orjson.dumps({RULE: {"suspect_batch_nodes": BATCH}}).decode()


def done(seen: list[Event], action: str) -> dict[str, Any]:
    """Per node, when `action` succeeded on it (the action worker's clock)."""
    return {
        n: e.occurred_at
        for e in seen
        if isinstance(e, ActionSucceeded) and e.payload.action == action
        for n in e.payload.nodes
    }


def test_a_big_job_failing_five_times_drains_only_its_suspects_in_turn_live(
    kafka_settings: KafkaSettings,
    worker_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Happening now, as the action results will: replay then ticks through minutes, not months.
    # Whole hours, so its failures fall in one of the rule's (epoch-aligned) windows as before.
    shift = timedelta(hours=(utcnow() - T0) // timedelta(hours=1) - 1)
    events = [
        e.model_copy(update={"occurred_at": e.occurred_at + shift}) for e in failing_five_times(BIG)
    ]
    env = {**worker_env, "CENTRALITY_STREAMS_RULE_CONFIG": RULES}
    for name, value in env.items():  # the oracle and replay decide as the worker does
        monkeypatch.setenv(name, value)
    expected, _ = oracle(events)
    streams = StreamsWorker(env, tmp_path / "run")
    adapter = InMemoryAdapter()

    async def story(slack: SlackFake) -> list[Event]:
        fleet = {"test": len(BIG)}
        acting = worker(kafka_settings, adapter, slack, fleet_size=fleet, batch_poll_s=0.5)
        async with acting:
            await emit(kafka_settings, events)
            return await wait_for(
                kafka_settings, lambda s: set(done(s, "release_nodes")) >= set(SUSPECTS), 150
            )

    streams.start()
    try:
        with SlackFake() as slack:
            seen = asyncio.run(story(slack))
        # Read back through the codec: each one parsed and passed the contract on the way.
        sent = triggers_sent(
            kafka_settings, lambda ts: {str(t.event_id) for t in ts} >= expected, 30, streams.check
        )
    finally:
        streams.stop()
    decided = list({t.event_id: t for t in sent}.values())  # a redelivery may resend one
    assert {str(t.event_id) for t in decided} >= expected
    quarantines = [t for t in decided if isinstance(t, QuarantineNodes)]
    assert sorted(n for q in quarantines for n in q.payload.nodes) == sorted(SUSPECTS)
    for q in quarantines:
        (node,) = q.payload.nodes
        assert SUSPECTS[node] in q.payload.reason and "5 failed attempts" in q.payload.reason
    (told,) = [t for t in decided if isinstance(t, Notify) and t.payload.rule == RULE]
    assert "only suspects are drained" in told.payload.title
    assert len(told.payload.reason) <= TEXT and "more" in told.payload.reason
    assert dead_letters(kafka_settings) == []

    # Only the suspects were out, and never more than BATCH of them before their benchmark.
    drained, benchmarked = done(seen, "quarantine_nodes"), done(seen, "run_benchmark")
    assert set(drained) == set(benchmarked) == set(SUSPECTS)
    last = max(drained, key=drained.__getitem__)
    assert sum(benchmarked[n] <= drained[last] for n in drained if n != last) >= 1
    assert set(adapter.drained) == set()  # every one released after its passing benchmark

    # Replay reads the same offsets, action results included, and decides what the worker did.
    ranges = asyncio.run(whole_topics(kafka_settings, ["jobs", "nodes", "actions"]))
    result = CliRunner().invoke(app, ["replay", *kafka_args(ranges), "--json"])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.stdout)
    statuses = {d["trigger_id"]: d["status"] for d in doc["decisions"]}
    assert statuses == dict.fromkeys({str(t.event_id) for t in decided}, "same")
