"""The ledger in memory: what the circuit breakers are given to count."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from aiokafka.errors import KafkaTimeoutError, MessageSizeTooLargeError, NodeNotReadyError

from actions.ledger import (
    Ledger,
    LedgerEntry,
    Outcome,
    ThreadRef,
    Told,
    _entries,
    retrying_transient,
)


def entry(outcome: Outcome, cluster: str = "c", trigger_id: uuid.UUID | None = None) -> LedgerEntry:
    return LedgerEntry(
        trigger_id=trigger_id or uuid.uuid4(),
        trigger_type="QuarantineNodes",
        action="quarantine_nodes",
        cluster=cluster,
        subject="n1",
        nodes=("n1",),
        outcome=outcome,
        incident=f"{cluster}/n1",
    )


async def test_acted_holds_what_was_or_may_have_been_done_per_cluster() -> None:
    ledger = Ledger()
    done, doubt, planned = entry("succeeded"), entry("started"), entry("dry_run")
    other = entry("succeeded", cluster="d")
    for e in (done, doubt, planned, other, entry("skipped"), entry("failed")):
        await ledger.record(e)
    shadow = ledger.history(planned=True)
    assert {e.trigger_id for e in shadow.acted("c", "quarantine_nodes")} == {
        done.trigger_id,
        doubt.trigger_id,
        planned.trigger_id,
    }
    live = ledger.history(planned=False)  # what was only planned never counts for real
    assert {e.trigger_id for e in live.acted("c", "quarantine_nodes")} == {
        done.trigger_id,
        doubt.trigger_id,
    }
    assert live.acted("d", "quarantine_nodes") == [other]
    assert live.acted("c", "quarantine_nodes", subject="n1") == live.acted("c", "quarantine_nodes")
    assert live.acted("c", "quarantine_nodes", subject="n2") == []
    assert live.acted("c", "release_nodes") == [] and live.acted("none", "quarantine_nodes") == []
    assert len(ledger.entries()) == 6


async def test_an_entry_that_changes_outcome_moves_in_and_out_of_acted() -> None:
    ledger = Ledger()
    started = entry("started")
    history = ledger.history(planned=False)
    await ledger.record(started)
    assert history.acted("c", "quarantine_nodes", "n1") == [started]
    failed = entry("failed", trigger_id=started.trigger_id)
    await ledger.record(failed)
    assert history.acted("c", "quarantine_nodes") == []
    assert history.acted("c", "quarantine_nodes", "n1") == []
    assert ledger.get(started.trigger_id) == failed
    succeeded = entry("succeeded", trigger_id=started.trigger_id)
    await ledger.record(succeeded)
    assert history.acted("c", "quarantine_nodes", "n1") == [succeeded]


def move(action: str, at_s: int, outcome: Outcome = "succeeded", **kw: object) -> LedgerEntry:
    return entry(outcome).model_copy(
        update={
            "action": action,
            "nodes": ("n1", "n2"),
            "recorded_at": datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=at_s),
            **kw,
        }
    )


async def test_a_nodes_standing_follows_its_latest_move_whatever_the_reading_order() -> None:
    ledger = Ledger()
    history = ledger.history(planned=False)
    drain, release = move("quarantine_nodes", 10), move("release_nodes", 20)
    await ledger.record(release)  # read before the drain it follows: the order read is no matter
    await ledger.record(drain)
    assert history.drained("c") == {}
    again = move("quarantine_nodes", 30, outcome="started")  # in doubt: it may have drained
    await ledger.record(again)
    assert set(history.drained("c")) == {"n1", "n2"}
    assert history.drained("c")["n1"] == again.recorded_at
    await ledger.record(again.model_copy(update={"outcome": "failed"}))  # it did not
    assert history.drained("c") == {}
    await ledger.record(move("quarantine_nodes", 40, error="drain refused"))
    assert history.drained("c") == {}
    # Moves done with an error stay in the record; they only do not count as drains.
    assert [(e.action, e.error) for e in history.moves("c", "n1")] == [
        ("release_nodes", None),
        ("quarantine_nodes", None),
        ("quarantine_nodes", "drain refused"),
    ]


async def test_standings_kept_as_entries_come_agree_with_folding_them_all_again() -> None:
    rng = random.Random(7)
    ledger = Ledger()
    ids = [uuid.uuid4() for _ in range(30)]
    for _ in range(600):
        outcome = rng.choice(["started", "succeeded", "failed", "skipped"])
        entry_ = move(
            rng.choice(["quarantine_nodes", "release_nodes"]),
            rng.randrange(100),
            outcome=outcome,  # type: ignore[arg-type]
            trigger_id=rng.choice(ids),
            nodes=tuple(rng.sample(["n1", "n2", "n3"], rng.randint(1, 2))),
            error=rng.choice([None, None, None, "boom"]),
        )
        await ledger.record(entry_)
        history = ledger.history(planned=False)
        expected: dict[str, datetime] = {}
        for node in ("n1", "n2", "n3"):
            latest = None
            for e in history.moves("c", node):
                if e.error is None and (latest is None or e.recorded_at >= latest.recorded_at):
                    latest = e
            if latest is not None and latest.action == "quarantine_nodes":
                expected[node] = latest.recorded_at
        assert history.drained("c") == expected


async def test_a_request_that_timed_out_is_tried_again_one_refused_is_not() -> None:
    """While the broker is away longer than a request's timeout, a ledger entry waits for it:
    an action is never done without its record (nor reported as an error instead)."""
    failures: list[Exception] = [KafkaTimeoutError(), NodeNotReadyError()]
    async for attempt in retrying_transient("test"):
        with attempt:
            if failures:
                raise failures.pop(0)
    assert not failures
    with pytest.raises(MessageSizeTooLargeError):
        async for attempt in retrying_transient("test"):
            with attempt:
                raise MessageSizeTooLargeError()


async def test_what_was_told_rides_beside_the_entries_and_names_incident_threads() -> None:
    ledger = Ledger()
    acted = entry("succeeded").model_copy(update={"thread": ThreadRef(channel="C1", ts="1.1")})
    told = Told(incident="inc-1", thread=ThreadRef(channel="C1", ts="2.2"), refused=True)
    await ledger.record(acted)
    await ledger.record_told(told)
    # Both kinds of record read back from the topic's bytes, each as itself.
    records = [SimpleNamespace(value=r.to_bytes(), offset=i) for i, r in enumerate((acted, told))]
    again = Ledger()
    again._apply(_entries(records))
    for read in (ledger, again):
        assert read.told("inc-1") == told and read.get(acted.trigger_id) == acted
        assert read.threads() == {"c/n1": acted.thread, "inc-1": told.thread}
        assert read.history(planned=False).acted("c", "quarantine_nodes") == [acted]
