"""The real streams worker on the real broker: decisions once, state intact, through redelivery,
a `kill -9` or a stall mid-stream, and a second worker joining. The pure Brain over the same
events is the oracle."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from schemas.envelope import Event
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from streams.brain.process import Brain
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.state.entities import JOBS, NODE_SETS, NODES
from streams.testing import checkpoint, heartbeat, running, sample, xid
from streams.testing import ended as exited
from tests.integration.streams.worker import (
    SESSION_TIMEOUT_S,
    StreamsWorker,
    changelog_history,
    table_contents,
    trigger_counts,
)

STALL_S = SESSION_TIMEOUT_S + 2.0  # dropped from the group, not just late
NODE_SETS_USED = (("a1", "a2"), ("b1", "b2"), ("c1",))


def scenario(unique: str, jobs: int, first: int = 0) -> list[Event]:
    """Jobs that checkpoint and crash, round-robin over node sets; GPU samples in between."""
    events: list[Event] = []
    for i in range(first, first + jobs):
        job, nodes, t = f"slurm/it/{unique}-{i}", NODE_SETS_USED[i % 3], i * 20.0
        events += [
            running(job, at_s=t, nodes=nodes),
            checkpoint(100 + i, job, at_s=t + 5),
            sample(nodes[0], gpu=i % 8, at_s=t + 6, ecc_single_bit=i),
            heartbeat(nodes[0], at_s=t + 7),
            exited(job, at_s=t + 10, nodes=nodes),
        ]
    return events


def oracle(events: list[Event]) -> tuple[set[str], Brain]:
    brain = Brain(RuleEngine.load(StreamsSettings().rule_modules, {}))
    ids = {str(t.event_id) for e in events for t in brain.handle(e)}
    return ids, brain


async def emit(
    settings: KafkaSettings, events: list[Event], pause_every: int = 0, pause_s: float = 0.0
) -> None:
    async with Emitter(settings) as emitter:
        for n, event in enumerate(events, 1):
            await emitter.emit(event)
            if pause_every and n % pause_every == 0:
                await asyncio.sleep(pause_s)


def paced_producer(settings: KafkaSettings, events: list[Event]) -> threading.Thread:
    """Emits `events` at 50 a second (10 jobs): long enough for a kill or a rebalance to land
    in the middle, however loaded the machine is."""
    return threading.Thread(
        target=lambda: asyncio.run(emit(settings, events, pause_every=50, pause_s=1.0))
    )


def _order_free(table: str, value: dict[str, Any]) -> dict[str, Any]:
    """What must match whatever order the partitions interleaved in.

    A job's events share a partition, so a job must match exactly. Nodes and node sets also hear
    from many jobs through the forward topic, in an order across partitions that no one fixes:
    which failure tipped a window (hence when and why a quarantine story began, memo times) and
    which fault opened an incident (its id) may differ; the set of failures, the jobs, the
    counters, the story's stage and the decisions themselves may not.
    """
    if table == JOBS.table:
        return value
    dropped = {
        "story",  # its reason names the failures that tipped the window
        "last_quarantine_at",
        "rule_memo",
        "updated_at",
        "failures",
        # Which member's fault reached the incident's book first, which names it: the book
        # hears nodes of every partition in the order they come. In an incident or not must
        # match.
        "incident",
    }
    kept = {k: v for k, v in value.items() if k not in dropped}
    kept["in_incident"] = value.get("incident") is not None
    kept["failures"] = sorted((f["job_id"], f["attempt"], f["at"]) for f in value["failures"])
    if story := value.get("story"):
        kept["story"] = (story["stage"], sorted(story["triggers"]))
    return kept


def assert_tables_match(brain: Brain, app_id: str, settings: KafkaSettings) -> None:
    names = [k.table for k in (JOBS, NODES, NODE_SETS)]
    expected = {
        name: {
            key: _order_free(name, s.model_dump(mode="json"))
            for key, s in brain.tables[name].items()
        }
        for name in names
    }
    deadline = time.monotonic() + 30
    while True:
        tables = {
            name: {
                key: _order_free(name, value)
                for key, value in table_contents(app_id, name, settings).items()
            }
            for name in names
        }
        if tables == expected or time.monotonic() > deadline:
            break
        time.sleep(1)
    for name in names:
        assert set(tables[name]) == set(expected[name]), name
        for key, value in expected[name].items():
            assert tables[name][key] == value, (
                name,
                key,
                changelog_history(app_id, name, key, settings),
            )


def tables_match_eventually(brain: Brain, app_id: str, settings: KafkaSettings) -> None:
    """A state is written after its decisions are acknowledged, and its changelog record a
    moment later: seeing every trigger does not mean every changelog record is in yet."""
    deadline = time.monotonic() + 30
    while True:
        try:
            assert_tables_match(brain, app_id, settings)
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def run_until(
    worker: StreamsWorker, settings: KafkaSettings, expected: set[str], timeout_s: float = 90
) -> Any:
    return trigger_counts(settings, lambda c: set(c) >= expected, timeout_s, worker.check)


def test_redelivered_events_change_nothing_and_decide_nothing_again(
    kafka_settings: KafkaSettings, worker_env: dict[str, str], unique: str, tmp_path: Path
) -> None:
    events = [*scenario(unique, 15), xid("x1", 79, at_s=300)]
    expected, brain = oracle(events)
    # restarts; per node set a drain request and a notice; the XID's drain request (no action
    # worker here: nothing is drained, so nothing is benchmarked)
    assert len(expected) == 15 + 3 * 2 + 1
    worker = StreamsWorker(worker_env, tmp_path / "run")
    worker.start()
    try:
        asyncio.run(emit(kafka_settings, events))
        run_until(worker, kafka_settings, expected)
        asyncio.run(emit(kafka_settings, events))  # the same events (same ids) again
        time.sleep(3)
        counts = trigger_counts(kafka_settings, lambda c: False, 3, worker.check)
        tables_match_eventually(brain, worker_env["CENTRALITY_STREAMS_APP_ID"], kafka_settings)
    finally:
        worker.stop()
    assert set(counts) == expected
    assert set(counts.values()) == {1}


def kill_9_and_restart(worker: StreamsWorker) -> None:
    worker.kill9()
    worker.start()


def stall_past_its_session(worker: StreamsWorker) -> None:
    worker.freeze(STALL_S)


@pytest.mark.parametrize(
    ("disrupt", "seen_in_log"),
    [
        pytest.param(
            kill_9_and_restart, "unclean_stop_restoring_from_changelog", id="kill-9-and-restart"
        ),
        # A long GC pause or a starved CPU: the worker is dropped from the group and rejoins.
        # It lost the records it had fetched for partitions with nothing committed yet, before
        # fix 7 in streams/faust/transport.py (test_faust_transport.py shows that step alone).
        pytest.param(stall_past_its_session, "Heartbeat session expired", id="stalled"),
    ],
)
def test_a_worker_disrupted_mid_stream_loses_no_state_and_no_decision(
    kafka_settings: KafkaSettings,
    worker_env: dict[str, str],
    unique: str,
    tmp_path: Path,
    disrupt: Callable[[StreamsWorker], None],
    seen_in_log: str,
) -> None:
    before, during = scenario(unique, 6), scenario(unique, 150, first=6)
    expected, brain = oracle(before + during)
    expected_before, _ = oracle(before)
    producer = paced_producer(kafka_settings, during)
    worker = StreamsWorker(worker_env, tmp_path / "run")
    worker.start()
    try:
        asyncio.run(emit(kafka_settings, before))
        run_until(worker, kafka_settings, expected_before)
        producer.start()  # they keep coming while the worker is down
        seen = trigger_counts(
            kafka_settings, lambda c: len(c) >= len(expected_before) + 20, 60, worker.check
        )
        disrupt(worker)
        assert len(seen) < len(expected), "the disruption came too late to be mid-stream"
        counts = run_until(worker, kafka_settings, expected)
        assert seen_in_log in worker.process.log_file.read_text()
        try:
            tables_match_eventually(brain, worker_env["CENTRALITY_STREAMS_APP_ID"], kafka_settings)
        except AssertionError as exc:  # what the worker warned of tells where state was lost
            log = worker.process.log_file.read_text().splitlines()
            warned = [line for line in log if '"level":"warning"' in line or '"error"' in line]
            raise AssertionError(
                "\n".join([str(exc), "the worker warned:", *warned[-40:]])
            ) from exc
    finally:
        worker.stop()
        if producer.is_alive():
            producer.join()
    assert set(counts) == expected
    # Redelivery after the disruption may resend a decision whose state write was lost with
    # the process (same id, deduplicated downstream); it never invents or drops one.
    assert sum(counts.values()) - len(counts) <= 4


def test_a_second_worker_joining_mid_stream_loses_no_state_and_no_decision(
    kafka_settings: KafkaSettings, worker_env: dict[str, str], unique: str, tmp_path: Path
) -> None:
    """Scaling out: partitions move to the new worker while events keep coming; it restores
    their tables from the changelog and goes on from the committed offsets."""
    before, during = scenario(unique, 6), scenario(unique, 150, first=6)
    expected, brain = oracle(before + during)
    expected_before, _ = oracle(before)
    first = StreamsWorker(worker_env, tmp_path / "first")
    second_env = {**worker_env, "CENTRALITY_STREAMS_DATA_DIR": str(tmp_path / "second-data")}
    second = StreamsWorker(second_env, tmp_path / "second")

    def both_alive() -> None:
        first.check()
        second.check()

    first.start()
    try:
        asyncio.run(emit(kafka_settings, before))
        run_until(first, kafka_settings, expected_before)
        second.start()
        producer = paced_producer(kafka_settings, during)
        producer.start()  # the second worker joins while they arrive
        counts = trigger_counts(kafka_settings, lambda c: set(c) >= expected, 120, both_alive)
        producer.join()
        tables_match_eventually(brain, worker_env["CENTRALITY_STREAMS_APP_ID"], kafka_settings)
    finally:
        second.stop()
        first.stop()
    assert set(counts) == expected
    assert sum(counts.values()) - len(counts) <= 4
    assert '"type":"RestartJob"' in second.process.log_file.read_text(), "it never took partitions"
