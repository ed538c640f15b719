"""The history sink: every catalog topic → ClickHouse, in batches bounded by size and time.

A raw aiokafka loop, not Faust: it does no stateful work, and the per-message cost of Faust would
make it the slowest consumer of the system. Events go to `events` (the typed tables and the
dashboard aggregates follow by materialized views), dead letters to `dead_letters`.

Decoding and inserting happen in a pool of processes (`streams.history.writer`), several batches
at once; this process only fetches, sizes batches, and commits them in order.

Exactly-once into ClickHouse, by two layers: each batch's insert carries a deduplication token
derived from its offset ranges, so a retried insert is dropped by the server; and every table is a
ReplacingMergeTree keyed on event_id, which collapses rows re-inserted after a restart (read with
FINAL). Offsets are committed only after ClickHouse took the batch and every batch before it.

While ClickHouse is down the oldest batch is retried with backoff and fetching is paused
(back-pressure); the lag (end offsets minus committed) keeps being logged as `sink_progress`.
While Kafka is down the sink waits: nothing it fetched is lost and nothing uncommitted is
committed; the lag is not asked for (it was the request that timed out and ended the sink). Both
outages are said in a few lines, not one per retry (`schemas.runtime.outages`).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, TypeVar

import structlog
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaConnectionError, KafkaError, KafkaTimeoutError
from opentelemetry.trace import Link
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    RetryError,
    retry_if_exception_type,
    wait_random_exponential,
)

from schemas.placement import Placement
from schemas.runtime import kafka_clients, malloc, tracing
from schemas.runtime.batches import SkippedBatch, SkippingFetcher
from schemas.runtime.deadletter import count_dead_letter
from schemas.runtime.metrics.catalog import EVENTS_IN, PROCESSING_SECONDS, labelled
from schemas.runtime.metrics.kafka import partition_lags, report_lag
from schemas.runtime.metrics.server import READINESS, watch_clickhouse, watch_kafka
from schemas.runtime.outages import OUTAGES
from schemas.runtime.placement import read_by
from schemas.runtime.settings import KafkaSettings
from schemas.topics import CATALOG, topic_name
from streams.history import writer
from streams.history.migrations import migrate, plan
from streams.history.rows import SINK_CONSUMER, Record, estimated_rows
from streams.history.settings import ClickHouseSettings

log = structlog.get_logger("sink")
T = TypeVar("T")
_INSERT_POLL_MS = 20
_INSERT_SECONDS = PROCESSING_SECONDS.labels("sink_insert")
# The lag is asked of the broker; a broker that does not answer must not hold the sink's loop.
_LAG_TIMEOUT_S = 5.0
# What starting a consumer raises while no broker answers (a refused login is not among them).
KAFKA_AWAY = (KafkaConnectionError, KafkaTimeoutError)


class SinkSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_SINK_", extra="ignore")

    group_id: str = Field(default="centrality-sink", description="Consumer group of the sink.")
    batch_max_rows: int = Field(
        default=20_000, ge=1, description="Insert when this many rows wait (at most this many)."
    )
    batch_max_ms: int = Field(
        default=500, ge=10, description="…or when the oldest waited this long."
    )
    insert_processes: int = Field(
        default=2, ge=1, description="Processes decoding and inserting batches side by side."
    )
    retry_backoff_max_s: float = Field(default=30.0, description="Longest wait between retries.")
    lag_log_interval_s: float = Field(
        default=10.0, gt=0, description="How often the sink logs its lag (`sink_progress`)."
    )
    mmap_threshold_bytes: int = malloc.threshold_setting(
        "in the sink and its insert processes: batches, fetch responses"
    )


@dataclass
class Batch:
    placement: Placement
    """What the insert checks records against, fixed with the batch so a retry writes the same."""
    records: list[Record] = field(default_factory=list)
    rows: int = 0
    """Estimated before decoding (`estimated_rows`); the insert process counts exactly."""
    first: dict[TopicPartition, int] = field(default_factory=dict)
    last: dict[TopicPartition, int] = field(default_factory=dict)
    links: list[Link] = field(default_factory=list)
    """While tracing: the traces of (the first `LINKS_MAX`) records, for the insert's span."""
    passed: dict[TopicPartition, int] = field(default_factory=dict)
    """Offsets past the records with nothing to store (`schemas.runtime.batches.Fetch.passed`):
    committed with the batch, and no part of its token (a refetch may stop short of them)."""

    @property
    def offsets(self) -> dict[TopicPartition, int]:
        """What committing the batch commits."""
        offsets = {tp: o + 1 for tp, o in self.last.items()}
        for tp, after in self.passed.items():
            offsets[tp] = max(offsets.get(tp, after), after)
        return offsets

    @property
    def token(self) -> str:
        """The same records always form the same token, so a retried insert is deduplicated."""
        return ",".join(
            f"{tp.topic}:{tp.partition}:{self.first[tp]}-{o}" for tp, o in sorted(self.last.items())
        )


class HistorySink:
    """Its insert processes are spawned: a script that runs a sink in-process needs the usual
    `if __name__ == "__main__":` guard (the `centrality` and pytest entry points have it)."""

    def __init__(
        self,
        kafka: KafkaSettings | None = None,
        clickhouse: ClickHouseSettings | None = None,
        settings: SinkSettings | None = None,
    ) -> None:
        self.kafka = kafka or KafkaSettings()
        self.clickhouse = clickhouse or ClickHouseSettings()
        self.settings = settings or SinkSettings()
        self.records_fetched = 0
        self.rows_written = 0
        self.lag_messages: int | None = None
        """Messages not yet committed, as of the last `sink_progress` (None before the first)."""
        self.deadletter_topic = topic_name("deadletter", self.kafka)
        self._lag_logged_at = 0.0
        self._rows_seen = 0
        self._paused = False
        self._pool: ProcessPoolExecutor | None = None
        self._fetcher: SkippingFetcher | None = None

    def topics(self) -> list[str]:
        """Every event topic plus the dead letters; the action ledger is the workers' own."""
        return [
            s.full_name(self.kafka) for s in CATALOG if s.carries_events or s.name == "deadletter"
        ]

    async def run(self, stop: asyncio.Event | None = None) -> None:
        stop = stop or asyncio.Event()
        plan(self.clickhouse)  # no migrations, or none for the cluster, is no outage to wait out
        watch_kafka(self.kafka)
        watch_clickhouse(self.clickhouse.url)
        await self._retrying("migrate", lambda: asyncio.to_thread(migrate, self.clickhouse), stop)
        if stop.is_set():
            return
        malloc.map_large_blocks(self.settings.mmap_threshold_bytes)
        self._pool = self._start_pool()
        # Batches handed to the pool, oldest first; committed strictly in this order.
        inflight: deque[tuple[Future[writer.Written], Batch]] = deque()
        consumer: AIOKafkaConsumer | None = None
        try:
            await asyncio.gather(
                *(
                    asyncio.wrap_future(self._pool.submit(writer.ready))
                    for _ in range(self.settings.insert_processes)
                )
            )
            # Kafka away while the sink starts is an outage like any other: waited out.
            consumer = await self._retrying(
                "kafka_connect", self._connected, stop, dependency="kafka", on=KAFKA_AWAY
            )
            if consumer is None:
                return
            READINESS.add("partitions_assigned", lambda: bool(consumer.assignment()))
            self._fetcher = SkippingFetcher(consumer)
            log.info("sink_started", topics=self.topics(), database=self.clickhouse.database)
            while True:
                batch = await self._collect(consumer, stop, inflight)
                if batch.records:
                    inflight.append((self._submit(batch), batch))
                elif batch.passed:  # only markers read: committed in turn, nothing to insert
                    inflight.append((_nothing_written(), batch))
                # One batch more than processes may wait, so each process has the next at hand.
                while inflight and (
                    inflight[0][0].done()
                    or len(inflight) > self.settings.insert_processes
                    or stop.is_set()
                ):
                    if not await self._settle(consumer, *inflight.popleft(), stop):
                        return  # stopped while ClickHouse was down: uncommitted, read again later
                if stop.is_set():
                    return
                await self._log_progress(consumer)
        finally:
            for write, _ in inflight:
                write.cancel()
            _stop_pool(self._pool)
            if consumer is not None:
                await kafka_clients.stop(consumer)

    async def _connected(self) -> AIOKafkaConsumer:
        consumer = kafka_clients.consumer(
            self.kafka,
            *self.topics(),
            group_id=self.settings.group_id,
            client_id=f"{self.kafka.client_id}-sink",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=self.settings.batch_max_rows,
        )
        try:
            await consumer.start()
        except BaseException:
            await kafka_clients.stop(consumer)
            raise
        return consumer

    def _start_pool(self) -> ProcessPoolExecutor:
        # spawn, not fork: this process runs an event loop and the Kafka client's threads.
        return ProcessPoolExecutor(
            self.settings.insert_processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=writer.start,
            initargs=(self.clickhouse, os.getpid(), self.settings.mmap_threshold_bytes),
        )

    def _submit(self, batch: Batch) -> Future[writer.Written]:
        assert self._pool is not None
        args = (
            batch.records,
            batch.token,
            self.deadletter_topic,
            batch.placement,
            self.settings.batch_max_rows,
        )
        try:
            return self._pool.submit(writer.write_batch, *args)
        except BrokenProcessPool:  # a process died (OOM, kill): its batch is retried on a new pool
            log.warning("insert_pool_restarted")
            self._pool = self._start_pool()
            return self._pool.submit(writer.write_batch, *args)

    async def _collect(
        self,
        consumer: AIOKafkaConsumer,
        stop: asyncio.Event,
        inflight: deque[tuple[Future[writer.Written], Batch]],
    ) -> Batch:
        batch = Batch(read_by(consumer, self.kafka))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.batch_max_ms / 1000
        limit = self.settings.batch_max_rows
        traced = tracing.enabled()
        while batch.rows < limit and not stop.is_set():
            wait_ms = int((deadline - loop.time()) * 1000)
            if wait_ms <= 0:
                break
            # As many records as should fill the batch at the rows per record seen so far; the
            # very first fetch takes one record, to learn that before a batch overshoots.
            max_records = 1
            if self.records_fetched:
                per_record = self._rows_seen / self.records_fetched
                max_records = max(1, int((limit - batch.rows) / per_record))
            # An insert that finished waits to be committed: no waiting for more records then.
            insert_done = bool(inflight) and inflight[0][0].done()
            if inflight:
                wait_ms = 0 if insert_done else min(wait_ms, _INSERT_POLL_MS)
            assert self._fetcher is not None
            fetched, skipped, passed = await self._fetcher.getmany(
                timeout_ms=wait_ms, max_records=max_records
            )
            batch.passed.update(passed)
            if not fetched and not skipped and insert_done:
                break
            for tp, records in fetched.items():
                for r in records:
                    if traced and len(batch.links) < tracing.LINKS_MAX:
                        batch.links.extend(filter(None, [tracing.link(r.headers)]))
                    record = Record(r.topic, r.partition, r.offset, r.key, r.value)
                    rows = estimated_rows(record)
                    batch.records.append(record)
                    batch.rows += rows
                    self._rows_seen += rows
                self.records_fetched += len(records)
                batch.first.setdefault(tp, records[0].offset)
                batch.last[tp] = records[-1].offset
            for skip in skipped:
                self._add_skipped(batch, skip)
        return batch

    def _add_skipped(self, batch: Batch, skip: SkippedBatch) -> None:
        """An unreadable batch becomes a dead-letter row and its offsets count as written, so
        it is committed past with its neighbours and never fetched again."""
        letter = skip.dead_letter(SINK_CONSUMER)
        count_dead_letter(letter)
        batch.records.append(
            Record(
                self.deadletter_topic,
                skip.tp.partition,
                skip.first_offset,
                skip.tp.topic.encode(),
                letter.to_bytes(),
            )
        )
        batch.rows += 1
        batch.first.setdefault(skip.tp, skip.first_offset)
        batch.last[skip.tp] = skip.next_offset - 1

    async def _settle(
        self,
        consumer: AIOKafkaConsumer,
        write: Future[writer.Written],
        batch: Batch,
        stop: asyncio.Event,
    ) -> bool:
        """Wait for a batch's insert, retrying it until ClickHouse takes it, then commit its
        offsets: never before. False if stopped first. Traced as one span, linked to the
        traces of the records it stores."""
        if not batch.records:
            await self._commit(consumer, batch)
            return True
        with tracing.span(
            "history insert",
            lambda: {"centrality.rows": batch.rows, "centrality.records": len(batch.records)},
            kind=tracing.CONSUMER,
            links=batch.links,
        ):
            return await self._settle_batch(consumer, write, batch, stop)

    async def _settle_batch(
        self,
        consumer: AIOKafkaConsumer,
        write: Future[writer.Written],
        batch: Batch,
        stop: asyncio.Event,
    ) -> bool:
        submitted = [write]
        started = time.perf_counter()

        async def insert() -> writer.Written:
            if not submitted:
                submitted.append(self._submit(batch))
            written = asyncio.wrap_future(submitted.pop())
            stopping = asyncio.ensure_future(stop.wait())
            either: list[asyncio.Future[Any]] = [written, stopping]
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            if not written.done():  # an insert hanging on a frozen server must not hold a stop
                raise Stopping
            return written.result()

        async def paused(delay_s: float) -> None:
            if not self._paused:
                consumer.pause(*consumer.assignment())
                self._paused = True
            await self._back_off(consumer, delay_s, stop)

        written = await self._retrying("insert", insert, stop, sleep=paused, rows=batch.rows)
        if written is None:
            return False
        _INSERT_SECONDS.observe(time.perf_counter() - started)
        if self._paused:
            consumer.resume(*consumer.assignment())
            self._paused = False
        await self._commit(consumer, batch)
        self.rows_written += written.rows
        for (topic, type_), count in written.by_type.items():
            labelled(EVENTS_IN, topic, type_).inc(count)
        for letter in written.rejected:
            count_dead_letter(letter)
        return True

    async def _commit(self, consumer: AIOKafkaConsumer, batch: Batch) -> None:
        try:
            await consumer.commit(batch.offsets)
        except KafkaError as exc:  # written: read again later, the server drops it as a duplicate
            if not OUTAGES.explains("kafka"):
                log.warning("commit_failed", error=repr(exc))

    async def _back_off(
        self, consumer: AIOKafkaConsumer, delay_s: float, stop: asyncio.Event
    ) -> bool:
        """Sleep `delay_s` unless stopped, logging the growing lag. Partitions are paused, so
        `getmany` fetches nothing: it only keeps this consumer in its group meanwhile."""
        loop = asyncio.get_running_loop()
        until = loop.time() + delay_s
        while not stop.is_set() and loop.time() < until:
            await consumer.getmany(timeout_ms=0)
            await self._log_progress(consumer)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), min(1.0, max(0.0, until - loop.time())))
        return not stop.is_set()

    async def lag(self, consumer: AIOKafkaConsumer) -> int | None:
        """Messages on the assigned partitions that are not committed yet (written or not);
        None while the broker does not say."""
        kafka = OUTAGES.get("kafka")
        if kafka is not None and kafka.down:
            return None
        try:
            lags = await asyncio.wait_for(partition_lags(consumer), _LAG_TIMEOUT_S)
        except (KafkaError, TimeoutError):
            return None
        report_lag(self.settings.group_id, lags)
        return sum(lags.values())

    async def _log_progress(self, consumer: AIOKafkaConsumer) -> None:
        now = time.monotonic()
        if now - self._lag_logged_at < self.settings.lag_log_interval_s:
            return
        self._lag_logged_at = now
        lag = await self.lag(consumer)
        if lag is not None:  # else the last one known is logged again
            self.lag_messages = lag
        log.info(
            "sink_progress",
            records_fetched=self.records_fetched,
            rows_written=self.rows_written,
            lag_messages=self.lag_messages,
            blocked=self._paused,
        )

    async def _retrying(
        self,
        what: str,
        attempt: Callable[[], Awaitable[T]],
        stop: asyncio.Event,
        *,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        dependency: str = "clickhouse",
        on: type[BaseException] | tuple[type[BaseException], ...] = Exception,
        **context: Any,
    ) -> T | None:
        """`attempt()` until it succeeds, with jittered backoff, for every failure of kind `on`
        (any failure of the store counts as transient: ClickHouse down or not up yet); None if
        stopped first. Not logged while `dependency` is known to be away."""

        def log_retry(state: RetryCallState) -> None:
            if OUTAGES.explains(dependency):
                return
            error = state.outcome.exception() if state.outcome else None
            wait_s = state.next_action.sleep if state.next_action else 0.0
            log.warning(
                f"{what}_failed", error=str(error)[:300], retry_in_s=round(wait_s, 2), **context
            )

        async def pause(delay_s: float) -> None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay_s)

        retrying = AsyncRetrying(
            retry=retry_if_exception_type(on),
            wait=wait_random_exponential(multiplier=0.5, max=self.settings.retry_backoff_max_s),
            stop=lambda _: stop.is_set(),
            sleep=sleep or pause,
            before_sleep=log_retry,
        )
        try:
            async for trying in retrying:
                with trying:
                    result = await attempt()
        except RetryError:
            return None
        return result


class Stopping(Exception):
    """Asked to stop while an insert was still under way."""


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Stop the insert processes without waiting: one stuck in an insert (a frozen server) would
    otherwise hold the exit for its HTTP timeout. Its batch is not committed, so it is read again
    and the server drops what it already took (the insert's deduplication token)."""
    # ProcessPoolExecutor has no public terminate before Python 3.14.
    processes = list((pool._processes or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()


def _nothing_written() -> Future[writer.Written]:
    done: Future[writer.Written] = Future()
    done.set_result(writer.Written(rows=0, rejected=[]))
    return done
