"""The idempotency ledger: what was done per trigger id, on a compacted topic, read back on start.

A trigger is acted on at most once. `started` is written before the first adapter call, so a
worker that dies mid-action leaves the trigger *in doubt*: the next worker refuses to guess and
reports it rather than possibly draining or requeueing twice. `dry_run` entries never block a
real run later. The ledger also carries the Slack thread of each incident and is the history the
circuit breakers count, so both survive restarts with it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Iterator
from typing import Any, Literal

import structlog
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, wait_random_exponential

from schemas.envelope import utcnow
from schemas.settings import KafkaSettings
from schemas.topics import topic_name

log = structlog.get_logger("actions.ledger")

Outcome = Literal["started", "succeeded", "failed", "skipped", "dry_run"]


class ThreadRef(BaseModel):
    """Where an incident's Slack thread lives."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    channel: str
    ts: str


class LedgerEntry(BaseModel):
    """The record of one trigger id; the latest one per key is what compaction keeps."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["LedgerEntry"] = "LedgerEntry"
    trigger_id: uuid.UUID
    trigger_type: str
    action: str
    cluster: str
    subject: str
    nodes: tuple[str, ...] = Field(default=(), description="Nodes the action targets.")
    outcome: Outcome
    attempts: int = Field(default=0, ge=0)
    detail: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    incident: str
    thread: ThreadRef | None = None
    recorded_at: AwareDatetime = Field(default_factory=utcnow)

    def to_bytes(self) -> bytes:
        return self.__pydantic_serializer__.to_json(self)

    @classmethod
    def from_bytes(cls, data: bytes) -> LedgerEntry:
        return cls.model_validate_json(data)

    def blocks(self, *, dry_run: bool) -> bool:
        """Whether this entry means a new delivery of its trigger must do nothing."""
        return dry_run or self.outcome != "dry_run"


class Ledger:
    """The ledger in memory; `record` is where a durable ledger persists first."""

    def __init__(self) -> None:
        self._entries: dict[uuid.UUID, LedgerEntry] = {}

    def get(self, trigger_id: uuid.UUID) -> LedgerEntry | None:
        return self._entries.get(trigger_id)

    def entries(self) -> list[LedgerEntry]:
        return list(self._entries.values())

    def threads(self) -> dict[str, ThreadRef]:
        return {e.incident: e.thread for e in self._entries.values() if e.thread is not None}

    async def record(self, entry: LedgerEntry) -> None:
        self._entries[entry.trigger_id] = entry

    async def refresh(self) -> None:
        """Catch up with what other workers recorded (nothing to do for one in memory)."""

    def _apply(self, entries: Iterable[LedgerEntry]) -> None:
        for entry in entries:
            self._entries[entry.trigger_id] = entry


class KafkaLedger(Ledger):
    """The ledger on the `action-ledger` topic (compacted, keyed by trigger id)."""

    def __init__(self, kafka: KafkaSettings, *, load_timeout_s: float = 30.0) -> None:
        super().__init__()
        self._read_up_to: dict[TopicPartition, int] = {}  # offsets read so far, per partition
        self.kafka = kafka
        self.topic = topic_name("action-ledger", kafka)
        self.load_timeout_s = load_timeout_s
        self._producer = AIOKafkaProducer(
            bootstrap_servers=kafka.bootstrap,
            client_id=f"{kafka.client_id}-ledger",
            enable_idempotence=True,
            acks="all",
        )

    async def start(self) -> None:
        """Open the producer; entries are read by `load`, on every partition assignment."""
        await self._producer.start()

    async def stop(self) -> None:
        await self._producer.stop()

    async def record(self, entry: LedgerEntry) -> None:
        """Durable before it counts; retried while the broker is away (until cancelled), never
        when the broker refuses the entry itself."""
        async for attempt in _retrying_transient("ledger_record"):
            with attempt:
                await self._producer.send_and_wait(
                    self.topic, value=entry.to_bytes(), key=str(entry.trigger_id).encode()
                )
        await super().record(entry)

    async def refresh(self) -> None:
        """Read only what was recorded since the last load or refresh: a refusal re-checks the
        ledger, and re-reading the whole topic each time made a storm of refused triggers
        crawl (about 15 a second)."""
        await self.load(since_last=True)

    async def load_retrying(self, stop: asyncio.Event) -> None:
        """`load`, again and again while the broker is away, unless stopped."""
        async for attempt in _retrying_transient("ledger_load", stop):
            with attempt:
                await self.load()

    async def load(self, *, since_last: bool = False) -> None:
        """Read the whole topic up to its current end (triggers and ledger are not co-partitioned,
        so any worker may need any entry); `since_last`: from where the last read ended."""
        # Without a group the consumer is assigned every partition of the topic.
        consumer = AIOKafkaConsumer(
            self.topic,
            bootstrap_servers=self.kafka.bootstrap,
            client_id=f"{self.kafka.client_id}-ledger-load",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        try:
            partitions = list(consumer.assignment())
            if not partitions:
                raise RuntimeError(f"ledger topic {self.topic} is missing; run `centrality up`")
            await consumer.seek_to_beginning(*partitions)
            if since_last:
                for tp in partitions:
                    if self._read_up_to.get(tp):
                        consumer.seek(tp, self._read_up_to[tp])
            ends = await consumer.end_offsets(partitions)
            count = await asyncio.wait_for(self._read_to(consumer, ends), self.load_timeout_s)
            self._read_up_to.update(ends)
        finally:
            await consumer.stop()
        log.info("ledger_loaded", records=count, triggers=len(self._entries))

    async def _read_to(self, consumer: AIOKafkaConsumer, ends: dict[TopicPartition, int]) -> int:
        count = 0
        pending = {tp for tp, end in ends.items() if await consumer.position(tp) < end}
        while pending:
            fetched = await consumer.getmany(*pending, timeout_ms=500)
            for records in fetched.values():
                self._apply(_entries(records))
                count += len(records)
            for tp in list(pending):
                if await consumer.position(tp) >= ends[tp]:
                    pending.discard(tp)
        return count


def _entries(records: Iterable[Any]) -> Iterator[LedgerEntry]:
    """Entries of the ledger; anything else found on its topic is logged and passed over."""
    for r in records:
        if not r.value:
            continue
        try:
            yield LedgerEntry.from_bytes(r.value)
        except ValidationError as exc:
            log.error("ledger_entry_invalid", offset=r.offset, error=str(exc)[:300])


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, KafkaError):
        return bool(exc.retriable)
    return isinstance(exc, (TimeoutError, OSError))


def _retrying_transient(what: str, stop: asyncio.Event | None = None) -> AsyncRetrying:
    def log_retry(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        log.warning(f"{what}_retry", attempt=state.attempt_number, error=repr(error)[:300])

    return AsyncRetrying(
        retry=retry_if_exception(_transient),
        wait=wait_random_exponential(multiplier=0.2, max=10),
        stop=lambda _: stop is not None and stop.is_set(),
        before_sleep=log_retry,
        reraise=True,
    )
