"""`centrality bench sink`: the history sink from a filled topic into ClickHouse, next to a bare
clickhouse-connect insert of the same rows into the same (migrated) schema, in the same run.

The bare insert runs once before and once after the sink, each into a database of its own, and
the faster run counts: a burst of load from elsewhere on the machine cannot flatter the ratio."""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime, timedelta

import typer

from centrality.bench.cli import bench_app, report
from centrality.bench.history_data import node_telemetry
from centrality.bench.run import delete_topics
from schemas.codec import encode_batch
from schemas.envelope import Event
from schemas.runtime import kafka_clients
from schemas.runtime.admin import ensure_topics
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name
from streams.history.client import connect
from streams.history.migrations import migrate
from streams.history.rows import EVENT_COLUMNS, event_row
from streams.history.settings import ClickHouseSettings
from streams.history.sink import HistorySink, SinkSettings


def telemetry(nodes: int, samples_per_gpu: int) -> list[Event]:
    now = datetime.now(UTC)
    start = now - timedelta(minutes=samples_per_gpu)
    events: list[Event] = []
    for n in range(nodes):
        events += node_telemetry(f"b-{n:03d}", start, now, "bench", sick=n == 0)
    return events


async def fill(kafka: KafkaSettings, events: list[Event]) -> None:
    """One message per node and interval (a heartbeat and 8 samples), as the node agent sends."""
    producer = kafka_clients.producer(kafka, linger_ms=20)
    await producer.start()
    try:
        for i in range(0, len(events), 9):
            group = events[i : i + 9]
            for topic in ("nodes", "gpu"):
                part = [e for e in group if e.topic == topic]
                if part:
                    await producer.send(
                        topic_name(topic, kafka), encode_batch(part), key=part[0].key
                    )
        await producer.flush()
    finally:
        await producer.stop()


async def timed_sink(
    kafka: KafkaSettings, clickhouse: ClickHouseSettings, settings: SinkSettings, rows: int
) -> float:
    """Rows/s from the first record fetched to the last row written: group join is not counted,
    and every batch is, whole (batches are written side by side, so timing from the first one
    written would leave out work done before it)."""
    sink = HistorySink(kafka, clickhouse, settings)
    stop = asyncio.Event()
    task = asyncio.create_task(sink.run(stop))
    started_at = 0.0
    while sink.rows_written < rows:
        if task.done():
            task.result()
        if not started_at and sink.records_fetched:
            started_at = time.perf_counter()
        await asyncio.wait([task], timeout=0.002)
    elapsed = time.perf_counter() - started_at
    stop.set()
    await task
    return rows / elapsed


def bare_insert(clickhouse: ClickHouseSettings, events: list[Event], batch_rows: int) -> float:
    rows = [event_row(e, "bench", 0, i) for i, e in enumerate(events)]
    with connect(clickhouse) as client:
        started = time.perf_counter()
        for i in range(0, len(rows), batch_rows):
            client.insert("events", rows[i : i + batch_rows], column_names=EVENT_COLUMNS)
        return len(rows) / (time.perf_counter() - started)


@bench_app.command("sink")
def bench_sink(
    nodes: int = typer.Option(
        512,
        help="Simulated nodes (each 8 GPUs + a heartbeat). Enough for seconds of steady"
        " inserting: with few, the first batches and the last one's linger dominate.",
    ),
    minutes: int = typer.Option(60, help="Minutes of telemetry per node, one sample a minute."),
    batch_rows: int = typer.Option(20_000, help="CENTRALITY_SINK_BATCH_MAX_ROWS for both."),
    json: bool = typer.Option(False, "--json", help="Print one JSON line."),
) -> None:
    """History sink throughput against a bare clickhouse-connect insert (target ≥ 50%)."""
    run = uuid.uuid4().hex[:8]
    kafka = KafkaSettings().model_copy(update={"topic_prefix": f"bench{run}."})
    base = ClickHouseSettings()
    dbs = {
        name: base.model_copy(update={"database": f"bench_{name}_{run}"})
        for name in ("sink", "bare1", "bare2")
    }
    events = telemetry(nodes, minutes)
    asyncio.run(ensure_topics(kafka))
    asyncio.run(fill(kafka, events))
    try:
        for db in dbs.values():
            migrate(db)
        settings = SinkSettings(group_id=f"bench-{run}", batch_max_rows=batch_rows)
        bare = [bare_insert(dbs["bare1"], events, batch_rows)]
        rate = asyncio.run(timed_sink(kafka, dbs["sink"], settings, len(events)))
        bare.append(bare_insert(dbs["bare2"], events, batch_rows))
    finally:
        with connect(base, database="default") as client:
            for db in dbs.values():
                client.command(f"DROP DATABASE IF EXISTS `{db.database}`")
        asyncio.run(delete_topics(kafka))
    result = {
        "events": len(events),
        "insert_processes": settings.insert_processes,
        "rate_eps": round(rate),
        "bare_rate_eps": round(max(bare)),
        "ratio": round(rate / max(bare), 3),
    }
    report("bench sink", result, json=json)
