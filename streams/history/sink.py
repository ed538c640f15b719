"""The history sink: every catalog topic → ClickHouse, in batches bounded by size and time.

A raw aiokafka loop, not Faust: it does no stateful work, and the per-message cost of Faust would
make it the slowest consumer of the system. Events go to `events` (the typed tables and the
dashboard aggregates follow by materialized views), dead letters to `dead_letters`.

Exactly-once into ClickHouse, by two layers: each batch's insert carries a deduplication token
derived from its offset ranges, so a retried insert is dropped by the server; and every table is a
ReplacingMergeTree keyed on event_id, which collapses rows re-inserted after a restart (read with
FINAL). Offsets are committed only after ClickHouse took the batch.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import structlog
from aiokafka import AIOKafkaConsumer, TopicPartition
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.settings import KafkaSettings
from schemas.topics import CATALOG, topic_name
from streams.history.client import connect
from streams.history.migrations import migrate
from streams.history.rows import DEAD_LETTER_COLUMNS, EVENT_COLUMNS, SINK_CONSUMER, Rows, add_record
from streams.history.settings import ClickHouseSettings

log = structlog.get_logger("sink")


class SinkSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_SINK_", extra="ignore")

    group_id: str = Field(default="centrality-sink", description="Consumer group of the sink.")
    batch_max_rows: int = Field(
        default=20_000, ge=1, description="Insert when this many rows wait."
    )
    batch_max_ms: int = Field(
        default=500, ge=10, description="…or when the oldest waited this long."
    )
    retry_backoff_max_s: float = Field(default=30.0, description="Longest wait between retries.")
    lag_log_interval_s: float = Field(
        default=10.0, gt=0, description="How often the sink logs its lag (`sink_progress`)."
    )


@dataclass
class Batch:
    rows: Rows = field(default_factory=Rows)
    first: dict[TopicPartition, int] = field(default_factory=dict)
    last: dict[TopicPartition, int] = field(default_factory=dict)

    @property
    def token(self) -> str:
        """The same records always form the same token, so a retried insert is deduplicated."""
        return ",".join(
            f"{tp.topic}:{tp.partition}:{self.first[tp]}-{o}" for tp, o in sorted(self.last.items())
        )


class HistorySink:
    def __init__(
        self,
        kafka: KafkaSettings | None = None,
        clickhouse: ClickHouseSettings | None = None,
        settings: SinkSettings | None = None,
    ) -> None:
        self.kafka = kafka or KafkaSettings()
        self.clickhouse = clickhouse or ClickHouseSettings()
        self.settings = settings or SinkSettings()
        self.rows_written = 0
        self.deadletter_topic = topic_name("deadletter", self.kafka)
        self._lag_logged_at = 0.0
        self._next: dict[TopicPartition, int] = {}
        self._paused = False

    def topics(self) -> list[str]:
        """Every event topic plus the dead letters; the action ledger is the workers' own."""
        return [
            s.full_name(self.kafka) for s in CATALOG if s.carries_events or s.name == "deadletter"
        ]

    async def run(self, stop: asyncio.Event | None = None) -> None:
        stop = stop or asyncio.Event()
        await self._retrying("migrate", lambda: migrate(self.clickhouse), stop)
        client = connect(self.clickhouse)
        consumer = AIOKafkaConsumer(
            *self.topics(),
            bootstrap_servers=self.kafka.bootstrap,
            group_id=self.settings.group_id,
            client_id=f"{self.kafka.client_id}-sink",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=self.settings.batch_max_rows,
        )
        await consumer.start()
        log.info("sink_started", topics=self.topics(), database=self.clickhouse.database)
        # One insert in flight while the next batch is fetched and decoded: the two overlap, and
        # a stuck insert holds back at most one more batch (then nothing more is fetched).
        pending: tuple[asyncio.Task[None], Batch] | None = None
        try:
            while True:
                batch = await self._collect(consumer, stop)
                if pending is not None:
                    await self._settle(consumer, *pending)
                    pending = None
                if batch.last:
                    pending = (asyncio.create_task(self._write(client, consumer, batch)), batch)
                if stop.is_set():
                    break
            if pending is not None:
                await self._settle(consumer, *pending)
        finally:
            if pending is not None:
                pending[0].cancel()
            await consumer.stop()
            client.close()

    async def _collect(self, consumer: AIOKafkaConsumer, stop: asyncio.Event) -> Batch:
        batch = Batch()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.batch_max_ms / 1000
        while len(batch.rows) < self.settings.batch_max_rows and not stop.is_set():
            wait_ms = int((deadline - loop.time()) * 1000)
            if wait_ms <= 0:
                break
            fetched = await consumer.getmany(
                timeout_ms=wait_ms, max_records=self.settings.batch_max_rows - len(batch.rows)
            )
            for tp, records in fetched.items():
                for record in records:
                    add_record(batch.rows, record, self.deadletter_topic)
                batch.first.setdefault(tp, records[0].offset)
                batch.last[tp] = records[-1].offset
        return batch

    async def _settle(
        self, consumer: AIOKafkaConsumer, write: asyncio.Task[None], batch: Batch
    ) -> None:
        """Wait for a batch's insert, then commit its offsets: never before ClickHouse took it."""
        while not write.done():
            await asyncio.wait([write], timeout=0.5)
            if self._paused:
                # Partitions are paused, so this fetches nothing; it keeps us in the group.
                await consumer.getmany(timeout_ms=0)
        write.result()
        await consumer.commit({tp: o + 1 for tp, o in batch.last.items()})
        self._log_progress(consumer, batch)

    async def _write(self, client: Any, consumer: AIOKafkaConsumer, batch: Batch) -> None:
        """Retry until ClickHouse takes the batch; fetching is paused meanwhile (back-pressure)."""
        backoff_s = 0.5
        while True:
            try:
                await asyncio.to_thread(self._insert, client, batch)
                break
            except Exception as exc:  # any failure of the store: keep the batch, back off, retry
                if not self._paused:
                    consumer.pause(*consumer.assignment())
                    self._paused = True
                log.warning(
                    "insert_failed",
                    error=str(exc)[:300],
                    rows=len(batch.rows),
                    retry_in_s=backoff_s,
                )
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, self.settings.retry_backoff_max_s)
        if self._paused:
            consumer.resume(*consumer.assignment())
            self._paused = False
        self.rows_written += len(batch.rows)

    @staticmethod
    def _insert(client: Any, batch: Batch) -> None:
        token = batch.token
        if batch.rows.events:
            client.insert(
                "events",
                batch.rows.events,
                column_names=EVENT_COLUMNS,
                settings={"insert_deduplication_token": token},
            )
        if batch.rows.dead_letters:
            client.insert(
                "dead_letters",
                batch.rows.dead_letters,
                column_names=DEAD_LETTER_COLUMNS,
                settings={"insert_deduplication_token": f"{token}:dead_letters"},
            )

    def _log_progress(self, consumer: AIOKafkaConsumer, batch: Batch) -> None:
        self._next.update({tp: o + 1 for tp, o in batch.last.items()})
        for row in batch.rows.dead_letters:
            if row[0] == SINK_CONSUMER:
                log.warning("dead_letter", topic=row[3], offset=row[5], reason=row[1])
        now = time.monotonic()
        if now - self._lag_logged_at < self.settings.lag_log_interval_s:
            return
        self._lag_logged_at = now
        lag = 0
        for tp in consumer.assignment():
            high = consumer.highwater(tp)
            if high is not None and tp in self._next:
                lag += max(0, high - self._next[tp])
        log.info("sink_progress", rows_written=self.rows_written, lag_messages=lag)

    async def _retrying(self, what: str, fn: Any, stop: asyncio.Event) -> None:
        backoff_s = 0.5
        while not stop.is_set():
            try:
                await asyncio.to_thread(fn)
                return
            except Exception as exc:  # ClickHouse not up yet: wait for it like for an insert
                log.warning(f"{what}_failed", error=str(exc)[:300], retry_in_s=backoff_s)
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, self.settings.retry_backoff_max_s)
