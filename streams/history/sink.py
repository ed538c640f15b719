"""The history sink: every catalog topic → ClickHouse `events`, in batches bounded by size and time.

A raw aiokafka loop, not Faust: it does no stateful work, and the per-message cost of Faust would
make it the slowest consumer of the system.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import structlog
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.codec import DecodeError, decode
from schemas.settings import KafkaSettings
from schemas.topics import CATALOG
from streams.history.client import connect
from streams.history.settings import ClickHouseSettings

log = structlog.get_logger("sink")

COLUMNS = (
    "event_id",
    "type",
    "schema_version",
    "source",
    "cluster",
    "subject",
    "occurred_at",
    "observed_at",
    "topic",
    "partition",
    "offset",
    "payload",
)


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


@dataclass
class Batch:
    rows: list[list[Any]]
    offsets: dict[TopicPartition, int]

    @property
    def token(self) -> str:
        """The same records always form the same token, so a retried insert is deduplicated."""
        return ",".join(f"{tp.topic}:{tp.partition}:{o}" for tp, o in sorted(self.offsets.items()))


def rows_of(record: ConsumerRecord[bytes, bytes]) -> list[list[Any]]:
    """Envelope columns plus the event's JSON; undecodable records are the dead-letter path's."""
    try:
        events = decode(record.value or b"")
    except DecodeError:
        return []
    return [
        [
            e.event_id,
            e.type,
            e.schema_version,
            e.source,
            e.cluster,
            e.subject,
            e.occurred_at,
            e.observed_at,
            record.topic,
            record.partition,
            record.offset,
            orjson.dumps(e.payload.model_dump(mode="json")).decode(),
        ]
        for e in events
    ]


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

    def topics(self) -> list[str]:
        return [s.full_name(self.kafka) for s in CATALOG if s.carries_events]

    async def run(self, stop: asyncio.Event | None = None) -> None:
        stop = stop or asyncio.Event()
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
        try:
            while not stop.is_set():
                batch = await self._collect(consumer, stop)
                if batch.rows or batch.offsets:
                    await self._write(client, batch)
                    await consumer.commit({tp: o + 1 for tp, o in batch.offsets.items()})
        finally:
            await consumer.stop()
            client.close()

    async def _collect(self, consumer: AIOKafkaConsumer, stop: asyncio.Event) -> Batch:
        batch = Batch(rows=[], offsets={})
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.batch_max_ms / 1000
        while len(batch.rows) < self.settings.batch_max_rows and not stop.is_set():
            wait_ms = int((deadline - loop.time()) * 1000)
            if wait_ms <= 0:
                break
            fetched = await consumer.getmany(
                timeout_ms=wait_ms, max_records=self.settings.batch_max_rows
            )
            for tp, records in fetched.items():
                for record in records:
                    batch.rows.extend(rows_of(record))
                batch.offsets[tp] = records[-1].offset
        return batch

    async def _write(self, client: Any, batch: Batch) -> None:
        """Retry until ClickHouse takes the batch: offsets are committed only after it did."""
        backoff_s = 0.5
        while True:
            try:
                if batch.rows:
                    await asyncio.to_thread(self._insert, client, batch.rows, batch.token)
                self.rows_written += len(batch.rows)
                return
            except Exception as exc:  # any failure of the store: keep the batch, back off, retry
                log.warning(
                    "insert_failed", error=str(exc), rows=len(batch.rows), retry_in_s=backoff_s
                )
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, self.settings.retry_backoff_max_s)

    @staticmethod
    def _insert(client: Any, rows: Sequence[Sequence[Any]], token: str) -> None:
        client.insert(
            "events", rows, column_names=COLUMNS, settings={"insert_deduplication_token": token}
        )
