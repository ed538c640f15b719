"""Fetching that survives a record batch the client cannot read.

aiokafka raises from `getmany` when a fetched batch fails to decompress (`UnsupportedCodecError`)
or its CRC is wrong (`CorruptRecordException`), and it keeps its position: every later `getmany`
(and every restarted consumer) fetches the same batch and raises again, so one batch would stop
every partition of the consumer for good. These failures are deterministic: the batch is read
up to its first unreadable byte, the rest is skipped past (a seek to the batch's next offset) and
reported for a dead letter. The records before it in the same fetch are still delivered.

Offsets can also hold nothing to hand over: a transactional producer's commit and abort markers,
and the records of aborted transactions (every consumer of ours reads committed records only).
aiokafka's position moves past them; each fetch says where (`passed`), so a consumer can commit
there as Java's does, and a partition whose log ends in a marker does not lag one for good.

aiokafka names the failing batch nowhere public; its fetcher's frame in the traceback holds it
(`tp`, `next_batch`). `tests/unit/schemas/test_batches.py` breaks if an upgrade moves them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, NamedTuple

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import CorruptRecordException, IllegalStateError, UnsupportedCodecError

from schemas.deadletter import DeadLetter

UNREADABLE = (UnsupportedCodecError, CorruptRecordException)
Fetched = dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]


@dataclass(frozen=True)
class SkippedBatch:
    """Offsets [first_offset, next_offset) of one partition that could not be read."""

    tp: TopicPartition
    first_offset: int
    next_offset: int
    error: BaseException

    @property
    def reason(self) -> str:
        return "codec" if isinstance(self.error, UnsupportedCodecError) else "corrupt-batch"

    def dead_letter(self, consumer: str) -> DeadLetter:
        # The compressed bytes stay inside aiokafka; the offsets say where to find them.
        return DeadLetter(
            reason=self.reason,
            detail=(
                f"record batch at offsets {self.first_offset}..{self.next_offset - 1} "
                f"skipped: {type(self.error).__name__}: {self.error}"
            )[:1000],
            consumer=consumer,
            topic=self.tp.topic,
            partition=self.tp.partition,
            offset=self.first_offset,
            raw=b"",
        )


class Fetch(NamedTuple):
    records: Fetched
    skipped: list[SkippedBatch]
    passed: dict[TopicPartition, int]
    """Partitions read past offsets with nothing to hand over (markers, aborted records), after
    the records returned: the offset after them, to commit once those records are done."""


class UnlocatedBatchError(RuntimeError):
    """aiokafka raised for a batch but its frames no longer say which one (after an upgrade)."""


class SkippingFetcher:
    """`getmany` of one consumer, except that an unreadable batch is skipped and returned, not
    raised.

    When aiokafka raises, the records it had already taken from other partitions in that call
    are lost with the exception though their positions moved on: every partition goes back to
    just after the last record this fetcher returned, so nothing is skipped but the batch. Make
    a new fetcher after seeking the consumer yourself.
    """

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        self.consumer = consumer
        self._next: dict[TopicPartition, int] = {}

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int, max_records: int | None = None
    ) -> Fetch:
        assigned = self.consumer.assignment()
        for tp in self._next.keys() - assigned:
            del self._next[tp]
        for tp in assigned - self._next.keys():
            self._next[tp] = await self.consumer.position(tp)
        try:
            fetched = await self.consumer.getmany(
                *partitions, timeout_ms=timeout_ms, max_records=max_records
            )
            skipped: list[SkippedBatch] = []
        except UNREADABLE as exc:
            fetched, skipped = await self._read_around(exc)
        for tp, records in fetched.items():
            if records:
                self._next[tp] = records[-1].offset + 1
        for batch in skipped:
            self._next[batch.tp] = batch.next_offset
        return Fetch(fetched, skipped, await self._passed())

    async def _passed(self) -> dict[TopicPartition, int]:
        passed = {}
        for tp, after_last in self._next.items():
            try:
                position = await self.consumer.position(tp)
            except IllegalStateError:  # revoked meanwhile: forgotten at the next fetch
                continue
            if position > after_last:
                passed[tp] = self._next[tp] = position
        return passed

    async def _read_around(self, exc: BaseException) -> tuple[Fetched, list[SkippedBatch]]:
        tp, first, after = locate(exc)
        for other, position in self._next.items():
            self.consumer.seek(other, position)
        fetched: Fetched = {}
        # The records of the bad partition before the batch: one at a time, as each call then
        # returns before reaching the batch, until only the batch is left.
        while await self.consumer.position(tp) < first:
            try:
                got = await self.consumer.getmany(tp, timeout_ms=1000, max_records=1)
            except UNREADABLE as again:
                if locate(again)[0] != tp:
                    raise
                break  # nothing readable left before the batch (control records, say)
            fetched.setdefault(tp, []).extend(got.get(tp, []))
        self.consumer.seek(tp, after)
        return fetched, [SkippedBatch(tp, first, after, exc)]


def locate(exc: BaseException) -> tuple[TopicPartition, int, int]:
    """(partition, first offset, next offset) of the batch aiokafka failed on."""
    for frame_locals in _frames(exc.__traceback__):
        tp, batch = frame_locals.get("tp"), frame_locals.get("next_batch")
        if isinstance(tp, TopicPartition) and batch is not None:
            return tp, int(batch.base_offset), int(batch.next_offset)
    raise UnlocatedBatchError(
        f"cannot tell which record batch failed ({exc!r}): aiokafka's fetcher changed; "
        "see schemas/runtime/batches.py"
    ) from exc


def _frames(tb: TracebackType | None) -> Iterator[dict[str, Any]]:
    while tb is not None:
        yield tb.tb_frame.f_locals
        tb = tb.tb_next
