"""streams.faust.write_behind: a fold's state is written only once the records it sent (forwards,
statuses) are acknowledged, in fold order, in the fold's context; the agent reads it meanwhile;
a commit waits for it; a record that cannot be delivered stops every write after it and fails
the commit."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest

from streams.faust import clean_start
from streams.faust.write_behind import OutputUndelivered, WriteBehind

FOLDING: contextvars.ContextVar[str] = contextvars.ContextVar("folding", default="none")


class Table:
    def __init__(self) -> None:
        self.written: list[tuple[str, Any, str]] = []  # key, state, the context it was written in

    def store(self, key: str, state: Any) -> Any:
        return lambda: self.written.append((key, state, FOLDING.get()))


def _status() -> asyncio.Future[Any]:
    return asyncio.get_running_loop().create_future()


async def _never_again() -> Any:
    raise AssertionError("sent again although it was acknowledged")


def _writes() -> WriteBehind:
    return WriteBehind(retry_s=1.0, stopping=lambda: False)


async def test_a_state_without_statuses_waiting_is_written_at_once() -> None:
    writes, table = _writes(), Table()
    writes.write("nodes", "n1", "s1", table.store("n1", "s1"), [])
    assert table.written == [("n1", "s1", "none")]
    assert writes.pending("nodes", "n1") is None


async def test_the_state_waits_for_its_status_and_is_read_meanwhile() -> None:
    writes, table = _writes(), Table()
    status = _status()
    writes.write("nodes", "n1", "s1", table.store("n1", "s1"), [(status, _never_again)])
    assert table.written == []
    assert writes.pending("nodes", "n1") == "s1"
    assert writes.pending_keys("nodes") == ["n1"]
    assert writes.pending("jobs", "n1") is None
    status.set_result("acknowledged")
    await asyncio.sleep(0)  # the future's callbacks run on the next loop turn
    assert table.written == [("n1", "s1", "none")]
    assert writes.pending("nodes", "n1") is None
    assert writes.pending_keys("nodes") == []


async def test_writes_keep_fold_order_whatever_order_the_acknowledgements_come_in() -> None:
    writes, table = _writes(), Table()
    first, second = _status(), _status()
    writes.write("nodes", "n1", "s1", table.store("n1", "s1"), [(first, _never_again)])
    writes.write("nodes", "n1", "s2", table.store("n1", "s2"), [(second, _never_again)])
    # Nothing waits for the third, but it comes after the others: it waits for them.
    writes.write("nodes", "n2", "t1", table.store("n2", "t1"), [])
    assert writes.pending("nodes", "n1") == "s2"  # the last folded
    second.set_result("acknowledged")
    await asyncio.sleep(0)
    assert table.written == []
    first.set_result("acknowledged")
    await asyncio.sleep(0)
    assert [(k, s) for k, s, _ in table.written] == [("n1", "s1"), ("n1", "s2"), ("n2", "t1")]
    assert writes.pending("nodes", "n1") is None


async def test_a_write_runs_in_the_context_of_its_fold() -> None:
    writes, table = _writes(), Table()
    status = _status()
    FOLDING.set("message 7")
    writes.write("nodes", "n1", "s1", table.store("n1", "s1"), [(status, _never_again)])
    FOLDING.set("message 8")
    status.set_result("acknowledged")
    await asyncio.sleep(0)
    assert table.written == [("n1", "s1", "message 7")]


async def test_a_failed_status_is_sent_again_then_its_state_written() -> None:
    writes, table = _writes(), Table()
    status, resent = _status(), []

    async def again() -> str:
        resent.append("n1")
        return "acknowledged"

    writes.write("nodes", "n1", "s1", table.store("n1", "s1"), [(status, again)])
    status.set_exception(ConnectionError("broker away"))
    await writes.settle()
    assert resent == ["n1"]
    assert [(k, s) for k, s, _ in table.written] == [("n1", "s1")]


async def test_a_status_that_fails_again_stops_every_write_and_fails_the_commit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    distrusted: list[bool] = []
    monkeypatch.setattr(clean_start, "distrust", lambda: distrusted.append(True))
    writes, table = _writes(), Table()
    failing, later = _status(), _status()

    async def refused() -> Any:
        raise ValueError("record too large")  # deterministic: not retried

    writes.write("nodes", "n1", "s1", table.store("n1", "s1"), [(failing, refused)])
    writes.write("nodes", "n2", "t1", table.store("n2", "t1"), [(later, _never_again)])
    later.set_result("acknowledged")
    failing.set_exception(ValueError("record too large"))
    with pytest.raises(OutputUndelivered, match="record too large"):
        await asyncio.wait_for(writes.settle(), 5)
    assert table.written == []  # the changelog never gets a state whose status was lost
    assert distrusted == [True]  # the next start restores the tables from the changelog
    assert writes.pending("nodes", "n2") == "t1"


async def test_records_of_a_message_that_writes_nothing_are_waited_for_and_never_read() -> None:
    writes = _writes()
    forward = _status()
    writes.after([(forward, _never_again)])
    assert writes.pending_keys("") == []
    settled = asyncio.ensure_future(writes.settle())
    await asyncio.sleep(0.01)
    assert not settled.done()  # no commit passes the message before its forward lands
    forward.set_result("acknowledged")
    await asyncio.wait_for(settled, 5)


async def test_a_settle_waits_for_the_writes_queued_before_it_only() -> None:
    writes, table = _writes(), Table()
    before, after = _status(), _status()
    writes.write("nodes", "n1", "s1", table.store("n1", "s1"), [(before, _never_again)])
    settled = asyncio.ensure_future(writes.settle())
    await asyncio.sleep(0.01)
    assert not settled.done()
    writes.write("nodes", "n2", "t1", table.store("n2", "t1"), [(after, _never_again)])
    before.set_result("acknowledged")
    await asyncio.wait_for(settled, 5)
    assert [(k, s) for k, s, _ in table.written] == [("n1", "s1")]
    assert writes.pending("nodes", "n2") == "t1"


async def test_while_records_are_folded_together_a_state_is_held_until_released() -> None:
    """Behind a backlog a node folded in batch after batch is written once, its last state,
    in the context of the fold that made it."""
    writes, table = _writes(), Table()
    writes.holding = 1
    for n, state in enumerate(("s1", "s2", "s3")):
        token = FOLDING.set(f"fold {n}")
        writes.write("nodes", "n1", state, table.store("n1", state), [])
        FOLDING.reset(token)
    writes.write("nodes", "n2", "t1", table.store("n2", "t1"), [])
    assert table.written == []
    assert writes.pending("nodes", "n1") == "s3"
    assert sorted(writes.pending_keys("nodes")) == ["n1", "n2"]
    writes.release()
    assert table.written == [("n1", "s3", "fold 2"), ("n2", "t1", "none")]
    assert writes.pending("nodes", "n1") is None and writes.pending_keys("nodes") == []


async def test_held_states_are_written_oldest_first_beyond_the_bound_and_before_a_commit() -> None:
    writes, table = WriteBehind(retry_s=1.0, stopping=lambda: False, held_max=2), Table()
    writes.holding = 1
    for key in ("n1", "n2", "n3"):
        writes.write("nodes", key, key, table.store(key, key), [])
    assert [k for k, _, _ in table.written] == ["n1"]  # the third held pushed the first out
    await writes.settle()
    assert [k for k, _, _ in table.written] == ["n1", "n2", "n3"]


async def test_a_held_state_replaced_by_one_that_waits_for_its_status_is_never_written() -> None:
    writes, table = _writes(), Table()
    writes.holding = 1
    writes.write("nodes", "n1", "s1", table.store("n1", "s1"), [])
    status = _status()
    writes.write("nodes", "n1", "s2", table.store("n1", "s2"), [(status, _never_again)])
    writes.release()
    assert table.written == [] and writes.pending("nodes", "n1") == "s2"
    status.set_result("acknowledged")
    await asyncio.sleep(0)
    assert [(k, s) for k, s, _ in table.written] == [("n1", "s2")]
    assert writes.pending("nodes", "n1") is None


async def test_a_state_folded_alone_after_a_held_one_replaces_it_and_is_written_at_once() -> None:
    writes, table = _writes(), Table()
    writes.holding = 1
    writes.write("nodes", "n1", "s1", table.store("n1", "s1"), [])
    writes.holding = 0
    writes.write("nodes", "n1", "s2", table.store("n1", "s2"), [])
    assert [(k, s) for k, s, _ in table.written] == [("n1", "s2")]
    assert writes.pending("nodes", "n1") is None
    writes.release()
    assert len(table.written) == 1


async def test_states_held_are_written_before_a_later_one_that_is_not() -> None:
    """The changelog keeps fold order: what was held is written before a state folded after
    it, here one that waits for its status."""
    writes, table = _writes(), Table()
    writes.holding = 1
    writes.write("nodes", "n1", "s1", table.store("n1", "s1"), [])
    status = _status()
    writes.write("nodes", "n2", "t1", table.store("n2", "t1"), [(status, _never_again)])
    assert [(k, s) for k, s, _ in table.written] == [("n1", "s1")]
    status.set_result("acknowledged")
    await asyncio.sleep(0)
    assert [(k, s) for k, s, _ in table.written] == [("n1", "s1"), ("n2", "t1")]
