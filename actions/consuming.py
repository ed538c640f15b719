"""The consumers of the action worker (triggers, and the incident teller): records fetched as
room allows, run through `Inflight` (in order per subject), committed up to the last record
finished with all before it, partitions handed over after their work had a while to finish.

A record batch the client cannot read is skipped and dead-lettered; offsets holding only
transaction markers are committed past, as Java's consumer does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeAlias

import structlog
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError

from actions.bounds import MAX_KEY_BYTES, MAX_RAW_BYTES
from actions.inflight import Inflight
from schemas.deadletter import DeadLetter
from schemas.runtime import kafka_clients
from schemas.runtime.batches import SkippingFetcher
from schemas.runtime.metrics.kafka import sampling_lag
from schemas.runtime.outages import OUTAGES

log = structlog.get_logger("actions")
Record: TypeAlias = ConsumerRecord[bytes, bytes]
_COMMIT_TIMEOUT_S = 2.0
_ROOM_POLL_S = 0.2


@contextlib.asynccontextmanager
async def running(
    consumer: AIOKafkaConsumer, inflight: Inflight, *, group_id: str, grace_s: float
) -> AsyncIterator[None]:
    """The consumer started (its lag sampled) for the block; after it, the work under way gets
    `grace_s` to finish, what finished is committed, the rest abandoned uncommitted."""
    started = False
    try:
        await consumer.start()
        started = True
        async with sampling_lag(consumer, group_id):
            yield
    finally:
        await inflight.settle(grace_s)
        if started:
            await commit(consumer, inflight)
        await inflight.abandon()
        await kafka_clients.stop(consumer)


async def consume(
    consumer: AIOKafkaConsumer,
    inflight: Inflight,
    *,
    group_id: str,
    start: Callable[[Record], None],
    assigned: Callable[[], Awaitable[None]],
    dead_letter: Callable[[DeadLetter], Coroutine[Any, Any, None]],
    stop: asyncio.Event,
) -> None:
    """Until `stop`: each record to `start` (which hands its work to `inflight`); `assigned`
    first whenever partitions new to this consumer were assigned."""
    fetcher = SkippingFetcher(consumer)
    known: set[TopicPartition] = set()
    while not stop.is_set():
        await inflight.wait_for_room(_ROOM_POLL_S)
        if not inflight.room:
            await commit(consumer, inflight)
            continue
        fetched, skipped, passed = await fetcher.getmany(timeout_ms=200, max_records=inflight.room)
        # Partitions new here may hold records another worker finished with: read what it
        # recorded again before starting any. (A rebalance listener would race with fetching,
        # which aiokafka does meanwhile.)
        now = set(consumer.assignment())
        if now - known:
            await assigned()
        known = now
        for records in fetched.values():
            for record in records:
                start(record)
        for batch in skipped:  # after the records before it: offsets queue up in order
            letter = batch.dead_letter(group_id)
            inflight.start(batch.tp, batch.next_offset - 1, None, dead_letter(letter))
        for tp, after in passed.items():  # only markers since: committed past them in turn
            inflight.start(tp, after - 1, None, nothing())
        await commit(consumer, inflight)


def letter(record: Record, consumer: str, reason: str, detail: str) -> DeadLetter:
    """A record dead-lettered with why: its first bytes (and how many it had)."""
    raw, key = record.value or b"", record.key
    detail = detail[:1000]
    if len(raw) > MAX_RAW_BYTES:
        detail += f" (raw: the first {MAX_RAW_BYTES} of {len(raw)} bytes)"
    return DeadLetter(
        reason=reason,
        detail=detail,
        consumer=consumer,
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=None if key is None else key[:MAX_KEY_BYTES],
        raw=raw[:MAX_RAW_BYTES],
    )


async def nothing() -> None:
    """The work of a record that needs none (it is only committed past, in turn)."""


class Owned(Protocol):
    """Work the consumer's partitions own besides their records (a silence's end to tell)."""

    async def revoking(self, grace_s: float) -> None:
        """Start none until `assigned`; let what is under way finish (`grace_s` at most)."""

    def assigned(self) -> None:
        """The consumer's partitions are settled again."""


class Handover(ConsumerRebalanceListener):  # type: ignore[misc]
    """Before partitions go to another worker: let their work finish (a while), commit it,
    abandon the rest; `owned`, the other work the partitions own, waits and finishes alike."""

    def __init__(
        self,
        consumer: AIOKafkaConsumer,
        inflight: Inflight,
        grace_s: float,
        owned: Owned | None = None,
    ) -> None:
        self.consumer = consumer
        self.inflight = inflight
        self.grace_s = grace_s
        self.owned = owned

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        if self.owned is not None:
            await self.owned.revoking(self.grace_s)
        await self.inflight.settle(self.grace_s, revoked)
        await commit(self.consumer, self.inflight, revoked)
        await self.inflight.abandon(revoked)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        if self.owned is not None:
            self.owned.assigned()


async def commit(
    consumer: AIOKafkaConsumer,
    inflight: Inflight,
    partitions: set[TopicPartition] | None = None,
) -> None:
    """The action worker's commit (docs/commit-protocol.md), after every fetch, while it waits
    for room, at a revocation (`partitions`: those revoked) and at stop. In order:

    1. **Which offsets** (`Inflight.committable`): per partition, one past the last record
       finished with every record before it. A record's work is finished when its ledger
       outcome is written and its result emitted; work cancelled (abandoned at stop) is not.
       A quarantine parked while its batch is full (`actions.batches`) is not finished either:
       it holds its partition's offset for up to `batch_hold_s`, and records after it, done
       meanwhile, are committed with it once it is. Dead-lettered batches and offsets of
       transaction markers queue in the same order, as finished work.
    2. **Commit** them, each offset once, in `_COMMIT_TIMEOUT_S`. A commit that fails (a
       rebalance, the broker away) is not fatal: those records are delivered again, and the
       ledger makes a second delivery do nothing (or reports it in doubt: `started` only).
    """
    offsets = inflight.committable(partitions)
    if not offsets:
        return
    try:
        await asyncio.wait_for(consumer.commit(offsets), _COMMIT_TIMEOUT_S)
    except (KafkaError, TimeoutError) as exc:
        if not OUTAGES.explains("kafka"):  # tried again at every fetch: the outage says it
            log.warning("commit_failed", error=repr(exc), partitions=len(offsets))
