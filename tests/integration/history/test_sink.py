"""The history sink on the real stack: typed tables, dead letters, dedup token, kill -9."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aiokafka import AIOKafkaProducer

from centrality.bench.history_data import incident, node_telemetry
from schemas.codec import encode, encode_batch
from schemas.deadletter import DeadLetter
from schemas.envelope import Event
from schemas.placement import Placement
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name
from streams.history import writer
from streams.history.client import connect
from streams.history.rows import Record, Rows
from streams.history.settings import ClickHouseSettings
from streams.history.sink import HistorySink, SinkSettings
from streams.testing import xid
from tests.integration.streams.foreign import committed_up_to_end
from tests.support import foreign


async def produce(settings: KafkaSettings, messages: list[tuple[str, bytes, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=settings.bootstrap, linger_ms=20)
    await producer.start()
    try:
        for topic, key, value in messages:
            await producer.send(topic_name(topic, settings), value, key=key)
        await producer.flush()
    finally:
        await producer.stop()


def by_subject(settings: KafkaSettings, events: list[Event]) -> list[tuple[str, bytes, bytes]]:
    """Events grouped per (topic, subject) in messages of up to 8, as collectors batch them."""
    groups: dict[tuple[str, str], list[Event]] = {}
    for e in events:
        groups.setdefault((e.topic, e.subject), []).append(e)
    out = []
    for (topic, subject), group in groups.items():
        for i in range(0, len(group), 8):
            out.append((topic, subject.encode(), encode_batch(group[i : i + 8])))
    return out


def scalar(settings: ClickHouseSettings, sql: str) -> int:
    with connect(settings) as client:
        return int(client.query(sql).result_rows[0][0])


async def run_sink_until(sink: HistorySink, rows: int, timeout_s: float = 60.0) -> None:
    stop = asyncio.Event()
    task = asyncio.create_task(sink.run(stop))
    deadline = time.monotonic() + timeout_s
    while sink.rows_written < rows and time.monotonic() < deadline and not task.done():
        await asyncio.wait([task], timeout=0.1)
    stop.set()
    await asyncio.wait_for(task, 20)
    assert sink.rows_written >= rows, f"sink wrote {sink.rows_written} of {rows}"


async def test_sink_fills_typed_tables_and_dead_letters(
    kafka_settings: KafkaSettings, clickhouse_settings: ClickHouseSettings, unique: str
) -> None:
    events = incident(datetime.now(UTC))
    # A node's fatal XID produced to the jobs topic: the streams worker refuses it (wrong-topic),
    # so history must not hold it as a fact that replay would decide on.
    astray = xid("n-astray", 79)
    letter = DeadLetter(
        reason="malformed", consumer="streams", topic="x.jobs", partition=0, offset=3, raw=b"\x00{"
    )
    await produce(
        kafka_settings,
        [
            *by_subject(kafka_settings, events),
            ("jobs", b"j", b"not json"),
            ("jobs", astray.key, encode(astray)),
            ("deadletter", b"x.jobs", letter.to_bytes()),
        ],
    )
    sink = HistorySink(kafka_settings, clickhouse_settings, SinkSettings(group_id=f"sink-{unique}"))
    await run_sink_until(sink, len(events) + 3)

    assert scalar(clickhouse_settings, "SELECT count() FROM events") == len(events)
    typed = {
        "job_events": sum(e.topic == "jobs" for e in events),
        "gpu_samples": sum(e.type == "GpuSampled" for e in events),
        "log_lines": sum(e.type == "LogLinesObserved" for e in events),
        "node_events": sum(e.topic == "nodes" for e in events),
    }
    for table, want in typed.items():
        assert scalar(clickhouse_settings, f"SELECT count() FROM {table}") == want, table
    with connect(clickhouse_settings) as client:
        rows = client.query(
            "SELECT consumer, reason, raw FROM dead_letters ORDER BY consumer, reason"
        ).result_rows
    assert [(c, r) for c, r, _ in rows] == [
        ("history-sink", "malformed"),
        ("history-sink", "wrong-topic"),
        ("streams", "malformed"),
    ]
    assert rows[0][2] in (b"not json", "not json")


async def test_an_aborted_transaction_is_no_history(
    kafka_settings: KafkaSettings, clickhouse_settings: ClickHouseSettings, unique: str
) -> None:
    """A foreign transactional producer (as Flink's exactly-once writer) aborts, then commits:
    only what it committed is history, and the sink commits past the commit marker that ends
    each partition it wrote (else its lag read one for good)."""
    events = incident(datetime.now(UTC))[:40]
    undone, done = events[:20], events[20:]
    foreign.produce_transactions(
        kafka_settings,
        f"it-{unique}",
        [(False, by_subject(kafka_settings, undone)), (True, by_subject(kafka_settings, done))],
    )
    group = f"sink-{unique}"
    sink = HistorySink(kafka_settings, clickhouse_settings, SinkSettings(group_id=group))
    stop = asyncio.Event()
    running = asyncio.create_task(sink.run(stop))
    try:
        written = [topic_name(t, kafka_settings) for t in {e.topic for e in events}]
        await committed_up_to_end(kafka_settings.bootstrap, group, written, 30)
    finally:
        stop.set()
        await asyncio.wait_for(running, 20)
    with connect(clickhouse_settings) as client:
        stored = {r[0] for r in client.query("SELECT toString(event_id) FROM events").result_rows}
    assert stored == {str(e.event_id) for e in done}


async def test_retried_batch_is_dropped_by_its_dedup_token(
    kafka_settings: KafkaSettings, clickhouse_settings: ClickHouseSettings
) -> None:
    events = incident(datetime.now(UTC))[:500]
    records = [
        Record(topic_name(e.topic, kafka_settings), i % 3, i, e.key, encode(e))
        for i, e in enumerate(events)
    ]
    # Records spread over partitions as no partitioner would: placement is not what this tests.
    unplaced = Placement({})
    rows = writer.rows_of(records, "-", unplaced)
    # The same records fetched in another order, as after a restart: the same inserts.
    assert writer.rows_of(records[::-1], "-", unplaced) == rows
    with connect(clickhouse_settings) as client:
        # The second insert of rows 200-399 failed, then the whole batch was retried.
        writer.insert(client, Rows(rows.events[:200]), "t:0:0-499", max_rows=200)
        writer.insert(client, rows, "t:0:0-499", max_rows=200)
        writer.insert(client, rows, "t:0:0-499", max_rows=200)  # the response was lost: again
    # No FINAL: the repeated inserts never reached the table, nor the views behind it.
    assert scalar(clickhouse_settings, "SELECT count() FROM events") == len(events)
    assert scalar(clickhouse_settings, "SELECT count() FROM gpu_samples") == sum(
        e.type == "GpuSampled" for e in events
    )


def test_kill_9_mid_batch_duplicates_nothing(
    kafka_settings: KafkaSettings,
    clickhouse_settings: ClickHouseSettings,
    worker_env: dict[str, str],
    tmp_path: Path,
) -> None:
    now = datetime.now(UTC)
    events: list[Event] = []
    for n in range(12):  # ~40k GPU samples and heartbeats over 12 nodes
        events += node_telemetry(f"k-{n}", now - timedelta(hours=6), now, "kill", sick=False)
    asyncio.run(produce(kafka_settings, by_subject(kafka_settings, events)))
    env = {**os.environ, **worker_env, "CENTRALITY_SINK_BATCH_MAX_ROWS": "3000"}
    cli = Path(sys.executable).with_name("centrality")

    def start() -> subprocess.Popen[bytes]:
        log = (tmp_path / "sink.log").open("ab")
        return subprocess.Popen([str(cli), "sink"], env=env, stdout=log, stderr=log)

    count = "SELECT count() FROM events"
    proc = start()
    try:
        deadline = time.monotonic() + 90
        while scalar(clickhouse_settings, count) < 3000:
            assert proc.poll() is None, (tmp_path / "sink.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "sink wrote nothing"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)  # mid-stream: inserted batches not all committed yet
        proc.wait()
        assert scalar(clickhouse_settings, count) < len(events)
        proc = start()
        deadline = time.monotonic() + 120
        while scalar(clickhouse_settings, "SELECT count() FROM events FINAL") < len(events):
            assert proc.poll() is None, (tmp_path / "sink.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "sink did not catch up after the restart"
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    with connect(clickhouse_settings) as client:
        total, distinct = client.query(
            "SELECT count(), uniqExact(event_id) FROM events FINAL"
        ).result_rows[0]
        samples = client.query("SELECT count() FROM gpu_samples FINAL").result_rows[0][0]
    assert total == distinct == len(events)
    assert samples == sum(e.type == "GpuSampled" for e in events)
