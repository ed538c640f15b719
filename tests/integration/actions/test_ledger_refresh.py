"""Two action workers' ledgers on the real broker: a refresh reads only what is new."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from structlog.testing import capture_logs

from actions.ledger import KafkaLedger, LedgerEntry
from schemas.runtime.settings import KafkaSettings


def entry(subject: str) -> LedgerEntry:
    return LedgerEntry(
        trigger_id=uuid.uuid4(),
        trigger_type="QuarantineNodes",
        action="quarantine_nodes",
        cluster="c",
        subject=subject,
        outcome="succeeded",
        incident=f"c/{subject}",
    )


@asynccontextmanager
async def two_workers(kafka: KafkaSettings) -> AsyncIterator[tuple[KafkaLedger, KafkaLedger]]:
    """The ledgers of two action workers on the same topic."""
    mine, theirs = KafkaLedger(kafka), KafkaLedger(kafka)
    await mine.start()
    await theirs.start()
    try:
        yield mine, theirs
    finally:
        await mine.stop()
        await theirs.stop()


async def test_a_refresh_sees_another_workers_entries_reading_only_the_new_ones(
    kafka_settings: KafkaSettings,
) -> None:
    async with two_workers(kafka_settings) as (mine, theirs):
        old = [entry(f"n{i}") for i in range(50)]
        for e in old:
            await theirs.record(e)
        await mine.load()
        assert {e.trigger_id for e in old} <= {e.trigger_id for e in mine.entries()}
        new = entry("n-new")
        await theirs.record(new)
        with capture_logs() as logs:
            await mine.refresh()
        assert mine.get(new.trigger_id) == new
        [loaded] = [log for log in logs if log["event"] == "ledger_loaded"]
        assert loaded["records"] == 1  # not the 51 the topic holds
        with capture_logs() as logs:
            await mine.refresh()  # nothing new: nothing read
        assert [log["records"] for log in logs if log["event"] == "ledger_loaded"] == [0]


async def test_refreshes_asked_at_once_share_a_read_that_sees_what_came_before(
    kafka_settings: KafkaSettings,
) -> None:
    async with two_workers(kafka_settings) as (mine, theirs):
        await mine.load()
        new = [entry(f"n{i}") for i in range(5)]
        for e in new:
            await theirs.record(e)
        with capture_logs() as logs:
            await asyncio.gather(*(mine.refresh() for _ in range(40)))
        assert all(mine.get(e.trigger_id) == e for e in new)
        reads = [log for log in logs if log["event"] == "ledger_loaded"]
        # The first caller's read, and at most one more shared by all who asked meanwhile.
        assert 1 <= len(reads) <= 2
        assert sum(r["records"] for r in reads) == len(new)
        later = entry("n-later")
        await theirs.record(later)
        await mine.refresh()  # asked after those reads ended: a read of its own
        assert mine.get(later.trigger_id) == later
