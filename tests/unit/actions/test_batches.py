"""A big job's suspects are drained a few at a time: the rest wait their turn in service, and
each turn ends when the node was benchmarked, escalated or released (or held too long)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from actions.batches import out_in_batch
from actions.inflight import Inflight
from actions.ledger import History, LedgerEntry
from centrality.slack_fake import SlackFake
from schemas.events import ActionStarted, ActionSucceeded
from schemas.runtime.metrics.catalog import BATCH_WAITING
from tests.support.triggers import benchmark, release, suspect
from tests.unit.actions.test_dispatch import Rig
from tests.unit.actions.test_inflight import TP

NODES = tuple(f"s{i}" for i in range(1, 6))
BATCH = "suspects of slurm/test/42"


def drained(rig: Rig) -> set[str]:
    """Every node a suspect's drain took out so far."""
    return {
        n
        for e in rig.of(ActionSucceeded)
        if e.payload.action == "quarantine_nodes"
        for n in e.payload.nodes
    }


async def until(check: Callable[[], bool], timeout_s: float = 5.0) -> None:
    for _ in range(int(timeout_s / 0.01)):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"not so within {timeout_s} s")


def waiting() -> float:
    """Drains waiting now, in this process (the gauge is global: tests count from theirs)."""
    return BATCH_WAITING._value.get()  # type: ignore[attr-defined, no-any-return]


async def test_suspects_go_out_two_at_a_time_each_turn_ending_as_a_node_is_benchmarked(
    slack: SlackFake,
) -> None:
    rig = Rig(slack, quarantine_max_share=1.0, batch_poll_s=0.01)
    before = waiting()
    handling = [asyncio.create_task(rig.handle(suspect(n, most_out=2))) for n in NODES]
    await until(lambda: len(drained(rig)) == 2 and waiting() == before + 3)
    await asyncio.sleep(0.1)
    first = drained(rig)
    assert len(first) == 2 and len(rig.of(ActionStarted)) == 2  # the others were not started
    # A benchmark (whatever its verdict) ends a turn: the next suspect goes out.
    done = sorted(first)[0]
    await rig.handle(benchmark((done,)))
    await until(lambda: len(drained(rig)) == 3)
    # A release does too; the node released is in service again, not in the batch.
    await rig.handle(release((sorted(first)[1],)))
    await until(lambda: len(drained(rig)) == 4)
    await asyncio.sleep(0.1)
    assert waiting() == before + 1 and len(drained(rig)) == 4
    await rig.handle(benchmark((sorted(drained(rig) - first)[0],), window="w2"))
    await asyncio.wait_for(asyncio.gather(*handling), 5)
    assert drained(rig) == set(NODES) and waiting() == before
    entries = [rig.ledger.get(suspect(n, 2).event_id) for n in NODES]
    assert {e.batch for e in entries if e is not None} == {BATCH}


async def test_a_plan_or_an_operators_command_never_waits(slack: SlackFake) -> None:
    rig = Rig(slack, quarantine_max_share=1.0, batch_poll_s=0.01)
    for node in NODES[:2]:
        await rig.handle(suspect(node, most_out=2))
    commanded = suspect(NODES[2], most_out=2)
    commanded = commanded.model_copy(
        update={"payload": commanded.payload.model_copy(update={"operator": "alice"})}
    )
    await asyncio.wait_for(rig.handle(commanded), 2)
    assert drained(rig) == set(NODES[:3])
    planning = Rig(slack, quarantine_max_share=1.0, dry_run=True)
    for node in NODES:
        await asyncio.wait_for(planning.handle(suspect(node, most_out=1)), 2)
    assert len(planning.of(ActionSucceeded)) == len(NODES) and not planning.adapter.drained


async def test_work_of_the_same_node_queued_behind_ends_the_wait(slack: SlackFake) -> None:
    inflight = Inflight(limit=2)
    rig = Rig(slack, quarantine_max_share=1.0, batch_poll_s=0.01)
    rig.dispatcher.park = inflight.parked
    before = waiting()
    for offset, node in enumerate(NODES[:2]):
        inflight.start(TP, offset, node, rig.handle(suspect(node, most_out=2)))
    await inflight.settle(5)
    inflight.start(TP, 2, NODES[2], rig.handle(suspect(NODES[2], most_out=2)))
    await until(lambda: waiting() == before + 1)
    assert inflight.room == 2  # parked: the worker takes other triggers meanwhile
    await inflight.settle(0.05)  # and a hand-over does not wait for it
    assert inflight.committable() == {TP: 2}
    inflight.start(TP, 3, NODES[2], rig.handle(release((NODES[2],))))
    await inflight.settle(5)
    assert inflight.committable() == {TP: 4}
    assert [c for c in rig.adapter.calls if c in ("drain", "resume")][-2:] == ["drain", "resume"]


def entry(action: str, node: str, at: datetime, batch: str | None = None) -> LedgerEntry:
    return LedgerEntry(
        trigger_id=suspect(f"{action}/{node}/{at.isoformat()}", 1).event_id,
        trigger_type="QuarantineNodes",
        action=action,
        cluster="test",
        subject=node,
        nodes=(node,),
        outcome="succeeded",
        incident="i",
        batch=batch,
        recorded_at=at,
    )


def test_a_turn_ends_with_a_verdict_or_after_the_hold_and_other_drains_do_not_count() -> None:
    t0 = datetime(2026, 11, 28, tzinfo=UTC)
    history = History.of(
        [
            entry("quarantine_nodes", "a", t0, BATCH),
            entry("quarantine_nodes", "b", t0, BATCH),
            entry("quarantine_nodes", "c", t0, "suspects of another job"),
            entry("quarantine_nodes", "d", t0),  # a rule's own drain: no batch
            entry("run_benchmark", "b", t0 + timedelta(seconds=60)),
            entry("run_benchmark", "a", t0 - timedelta(seconds=60)),  # an earlier episode's
        ]
    )
    now = t0 + timedelta(seconds=120)
    assert out_in_batch(history, "test", BATCH, now, hold_s=3600) == {"a"}
    assert out_in_batch(history, "test", BATCH, t0 + timedelta(hours=2), hold_s=3600) == set()
    assert out_in_batch(history, "other", BATCH, now, hold_s=3600) == set()
