"""The Emitter: the one Kafka producer that collectors, actions and bespoke setups use.

What `emit` promises: when it returns, the event is acknowledged by Kafka or fsynced in the local
spool (events of batched families: once `flush()` returns, at most `batch_linger_ms` later on its
own). While Kafka is unreachable everything goes to the spool, and a background task redelivers it
in order when Kafka is back; new events queue behind the spool, so order per key holds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from types import TracebackType
from typing import Self

import structlog
from aiokafka import AIOKafkaProducer
from aiokafka.errors import (
    InvalidTopicError,
    KafkaError,
    MessageSizeTooLargeError,
    RecordListTooLargeError,
    RecordTooLargeError,
)

from schemas.codec import MAX_MESSAGE_BYTES, encode_checked, split_batches
from schemas.deadletter import DeadLetter
from schemas.envelope import Event
from schemas.runtime import kafka_clients, tracing
from schemas.runtime.deadletter import count_dead_letter
from schemas.runtime.emitter.batcher import Batcher, PendingBatch
from schemas.runtime.emitter.settings import EmitterSettings
from schemas.runtime.emitter.spool import Spool, SpooledRecord, SpoolFullError
from schemas.runtime.metrics.catalog import EVENTS_OUT, count_types, labelled
from schemas.runtime.metrics.server import watch_spool
from schemas.runtime.settings import KafkaSettings
from schemas.topics import spec, topic_name

log = structlog.get_logger("emitter")

_DRAIN_CHUNK = 500
_UNREACHABLE = (KafkaError, TimeoutError, OSError)
# The broker refuses this very record (a topic whose max.message.bytes is below the contract's
# limit, a bad topic name): sending it again can never succeed, so it is never spooled or retried.
_REFUSED = (
    MessageSizeTooLargeError,
    RecordTooLargeError,
    RecordListTooLargeError,
    InvalidTopicError,
)


class RecordRefused(RuntimeError):
    """Kafka refused the record itself: the event was not accepted (and is not spooled)."""


class Emitter:
    """Async producer of contract events. `async with Emitter() as e: await e.emit(event)`."""

    def __init__(
        self, settings: KafkaSettings | None = None, options: EmitterSettings | None = None
    ) -> None:
        self.settings = settings or KafkaSettings()
        self.options = options or EmitterSettings()
        self.spool = Spool(self.options.spool_dir, self.options.spool_max_bytes)
        watch_spool(self.spool)
        self._batcher = Batcher(self.options.batch_max_events, self.options.batch_max_bytes)
        self._producer: AIOKafkaProducer | None = None
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._drainer: asyncio.Task[None] | None = None
        self._spool_warned = False
        self._orphans: list[Spool] = []
        self._stopping = asyncio.Event()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Connect if Kafka answers; if not, start anyway and spool until it does."""
        with contextlib.suppress(*_UNREACHABLE):
            await self._connect()
        if self._producer is None:
            log.warning("kafka_unreachable_at_start", bootstrap=self.settings.bootstrap)
        self._tasks.append(asyncio.create_task(self._linger()))
        # Left behind by producers that died: older than anything we send, so they go first
        # (events of one key split across a dead producer and us may interleave).
        for orphan in self.spool.orphans():
            if orphan.empty:
                orphan.close(remove_if_empty=True)
            else:
                self._orphans.append(orphan)
        if self._orphans or not self.spool.empty:
            self._kick_drain()

    async def stop(self, drain_timeout_s: float = 5.0) -> None:
        """Flush open batches; give the spool a moment to drain; what is left stays on disk.
        Raises SpoolFullError, once closed, if batched events held in memory could be neither
        sent nor spooled: those are lost, and this is how the caller learns it."""
        # The linger task is asked, not cancelled: cancelled mid-flush, it would drop the batch
        # it was sending.
        self._stopping.set()
        await asyncio.gather(*self._tasks)
        self._tasks.clear()
        refused: SpoolFullError | None = None
        try:
            await self.flush()
        except SpoolFullError as exc:  # closed all the same; the caller hears of it below
            refused = exc
            log.error("events_refused_at_stop", events=len(self._batcher), error=str(exc))
        if self._drainer is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._drainer), drain_timeout_s)
            self._drainer.cancel()
        if not self.spool.empty:
            log.warning("spool_left_on_disk", dir=str(self.spool.directory))
        for spool in (*self._orphans, self.spool):
            spool.close(remove_if_empty=True)
        await self._disconnect()
        if refused is not None:
            raise refused

    async def emit(self, event: Event, headers: Sequence[tuple[str, bytes]] = ()) -> None:
        """Raises MessageTooLarge for an event no message can carry, and SpoolFullError when
        neither Kafka nor the spool (nor, for batched families, the bounded memory in front of
        them) takes it: either way the event was not accepted. `headers` (a trigger's
        signature, say) travel with this event's own message, so they are for families that
        are not batched."""
        topic = topic_name(event.topic, self.settings)
        if spec(event.topic).batched:
            if headers:
                raise ValueError(f"{event.type} travels batched: it cannot carry headers")
            if self._batcher.size_bytes >= self.options.pending_max_bytes:
                await self.flush()  # raises SpoolFullError while nothing takes the batches
            full = self._batcher.add(topic, event)
            if full is not None:
                # The event is accepted (in memory, bounded above); a refused send keeps the
                # batch for the next flush.
                with contextlib.suppress(SpoolFullError):
                    await self._deliver_batch(full)
        else:
            await self._deliver(topic, event.key, encode_checked(event), headers, event)
        labelled(EVENTS_OUT, topic, event.type).inc()

    async def emit_batch(self, events: Sequence[Event]) -> None:
        """Send events of one subject now, as one message or, past the message size limit, as
        several in order (a failure part-way leaves the earlier ones sent)."""
        first = events[0]
        topic = topic_name(first.topic, self.settings)
        for value in split_batches(events, self._max_message_bytes):
            await self._deliver(topic, first.key, value)
        count_types(EVENTS_OUT, topic, events)

    async def flush(self) -> None:
        """Send every open batch. A batch leaves the batcher only once it is delivered (or
        spooled): a flush that fails or is cancelled puts back what it had not sent."""
        while (batch := self._batcher.pop()) is not None:
            await self._deliver_batch(batch)

    @property
    def _max_message_bytes(self) -> int:
        return min(self.options.batch_max_bytes, MAX_MESSAGE_BYTES)

    async def _deliver_batch(self, batch: PendingBatch) -> None:
        parts = batch.split(self._max_message_bytes)
        for i, part in enumerate(parts):
            try:
                await self._deliver(part.topic, part.key, part.value())
            except BaseException:
                self._batcher.restore(PendingBatch.joined(parts[i:]))
                raise

    async def dead_letter(self, letter: DeadLetter) -> None:
        """Park a message no consumer could decode, keyed by its source topic."""
        count_dead_letter(letter)
        topic = topic_name("deadletter", self.settings)
        await self._deliver(topic, letter.topic.encode(), letter.to_bytes())
        labelled(EVENTS_OUT, topic, letter.kind).inc()

    async def _deliver(
        self,
        topic: str,
        key: bytes | None,
        value: bytes,
        headers: Sequence[tuple[str, bytes]] = (),
        event: Event | None = None,
    ) -> None:
        if not tracing.enabled():
            await self._deliver_record(SpooledRecord(topic, key, value, list(headers)))
            return
        # The span's own context travels in the headers: consumers continue this trace. A
        # batched message starts a trace of its own (its events were emitted from many).
        with tracing.span(
            f"emit {topic}", lambda: _attributes(topic, event), kind=tracing.PRODUCER
        ):
            await self._deliver_record(
                SpooledRecord(topic, key, value, [*tracing.inject_headers(), *headers])
            )

    async def _deliver_record(self, record: SpooledRecord) -> None:
        topic, key, value = record.topic, record.key, record.value
        async with self._lock:
            producer = self._producer if self.spool.empty else None
            if producer is None:
                self._to_spool(record)
                return
            try:
                sent = await producer.send(topic, value=value, key=key, headers=record.headers)
            except _REFUSED as exc:
                raise RecordRefused(f"{topic} refused a {len(value)}-byte record: {exc!r}") from exc
            except _UNREACHABLE as exc:
                self._to_spool(record, exc)
                return
        try:
            await asyncio.wait_for(sent, self.options.delivery_timeout_ms / 1000)
        except _REFUSED as exc:
            raise RecordRefused(f"{topic} refused a {len(value)}-byte record: {exc!r}") from exc
        except _UNREACHABLE as exc:
            async with self._lock:
                self._to_spool(record, exc)

    def _to_spool(self, record: SpooledRecord, exc: BaseException | None = None) -> None:
        """Caller holds the lock. Raises SpoolFullError: the event was not accepted."""
        if exc is not None and not self._spool_warned:
            log.warning(
                "kafka_unreachable_spooling", error=repr(exc), dir=str(self.spool.directory)
            )
            self._spool_warned = True
        try:
            self.spool.append([record])
        except Exception:
            log.error("spool_full_event_refused", dir=str(self.spool.directory))
            raise
        self._kick_drain()

    def _kick_drain(self) -> None:
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        """Redeliver adopted spools, then ours, in order and in chunks, backing off meanwhile."""
        while self._orphans:
            await self._drain_one(self._orphans[0])
            self._orphans.pop(0).close(remove_if_empty=True)
        await self._drain_one(self.spool)

    async def _drain_one(self, spool: Spool) -> None:
        backoff_s = 0.2
        while True:
            async with self._lock:
                chunk = _take(spool, _DRAIN_CHUNK)
            if not chunk:
                return
            try:
                if self._producer is None:
                    await self._connect()
                assert self._producer is not None
                futures = [
                    await self._producer.send(r.topic, value=r.value, key=r.key, headers=r.headers)
                    for _, r in chunk
                ]
                await asyncio.wait_for(
                    asyncio.gather(*futures), self.options.delivery_timeout_ms / 1000
                )
            except _REFUSED:
                # One record of the chunk can never be sent (a broker limit lowered since it
                # was spooled): send them one by one, dropping only the refused, so it cannot
                # hold everything behind it for ever.
                if not await self._send_each([r for _, r in chunk]):
                    await self._disconnect()
                    await asyncio.sleep(backoff_s)
                    continue
            except _UNREACHABLE as exc:
                log.info("spool_redelivery_waiting", error=repr(exc), retry_in_s=backoff_s)
                await self._disconnect()
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, self.options.retry_backoff_max_s)
                continue
            async with self._lock:
                spool.ack(chunk[-1][0])
                if spool.empty:
                    log.info("spool_drained", dir=str(spool.directory))
                    self._spool_warned = False
            backoff_s = 0.2

    async def _send_each(self, records: list[SpooledRecord]) -> bool:
        """Records sent one by one, the refused dropped; False if the broker went away meanwhile
        (the caller retries the chunk: a record sent twice is absorbed by event-id dedupe)."""
        for r in records:
            try:
                if self._producer is None:
                    await self._connect()
                assert self._producer is not None
                sent = await self._producer.send(
                    r.topic, value=r.value, key=r.key, headers=r.headers
                )
                await asyncio.wait_for(sent, self.options.delivery_timeout_ms / 1000)
            except _REFUSED as exc:
                log.error(
                    "spooled_record_refused", topic=r.topic, bytes=len(r.value), error=repr(exc)
                )
            except _UNREACHABLE:
                return False
        return True

    async def _linger(self) -> None:
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), self.options.batch_linger_ms / 1000)
            try:
                await self.flush()
            except Exception:  # a full spool, say: the batch is back in the batcher, try later
                log.exception("batch_flush_failed")

    async def _connect(self) -> None:
        producer = kafka_clients.producer(
            self.settings,
            linger_ms=5,
            request_timeout_ms=self.options.delivery_timeout_ms,
            max_request_size=2 * 1024 * 1024,
        )
        try:
            await producer.start()
        except BaseException:
            await producer.stop()
            raise
        self._producer = producer

    async def _disconnect(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            with contextlib.suppress(*_UNREACHABLE):
                await producer.stop()


def _attributes(topic: str, event: Event | None) -> dict[str, str]:
    if event is None:
        return {"messaging.destination.name": topic}
    return {
        "messaging.destination.name": topic,
        "centrality.event.type": event.type,
        "centrality.event.id": str(event.event_id),
        "centrality.subject": event.subject,
    }


def _take(spool: Spool, n: int) -> list[tuple[tuple[int, int], SpooledRecord]]:
    chunk = []
    for item in spool.pending():
        chunk.append(item)
        if len(chunk) >= n:
            break
    return chunk
