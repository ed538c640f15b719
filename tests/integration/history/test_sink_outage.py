"""The history sink while its ClickHouse server is down: it waits, commits nothing it did not
write, shows its lag growing, and once the server is back every event lands exactly once."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from centrality.bench.history_data import node_telemetry
from centrality.stack.clickhouse import LocalClickHouse
from centrality.stack.settings import StackSettings
from schemas.envelope import Event
from schemas.runtime.settings import KafkaSettings
from streams.history.client import connect
from streams.history.lag import group_lag
from streams.history.settings import ClickHouseSettings
from streams.history.sink import HistorySink, SinkSettings
from tests.integration.history.test_sink import by_subject, produce
from tests.ports import free_port


@pytest.fixture
def own_clickhouse(tmp_path: Path) -> Iterator[LocalClickHouse]:
    """A ClickHouse server of this test only, so it can be stopped (never the shared one)."""
    server = LocalClickHouse(StackSettings(state_dir=tmp_path / "ch", clickhouse_port=free_port()))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def telemetry(prefix: str, nodes: int) -> list[Event]:
    now = datetime.now(UTC)
    return [
        e
        for n in range(nodes)
        for e in node_telemetry(f"{prefix}-{n}", now - timedelta(hours=1), now, "o", sick=False)
    ]


async def until(
    what: str, done: Callable[[], bool], task: asyncio.Task[None], timeout_s: float
) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert not task.done(), f"the sink stopped while waiting for {what}: {task}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.wait([task], timeout=0.1)


async def committed(kafka: KafkaSettings, sink: HistorySink) -> int:
    lags = await group_lag(kafka, sink.settings.group_id, sink.topics())
    return sum(t.committed for t in lags)


async def test_sink_waits_out_a_clickhouse_outage_and_writes_everything_once(
    kafka_settings: KafkaSettings, own_clickhouse: LocalClickHouse, unique: str
) -> None:
    clickhouse = ClickHouseSettings(url=own_clickhouse.url, database=f"t_{unique}")
    sink = HistorySink(
        kafka_settings,
        clickhouse,
        SinkSettings(
            group_id=f"sink-{unique}",
            batch_max_ms=100,
            retry_backoff_max_s=1.0,
            lag_log_interval_s=0.2,
        ),
    )
    before, during, after = telemetry("a", 2), telemetry("b", 2), telemetry("c", 2)
    first, second, third = (by_subject(kafka_settings, p) for p in (before, during, after))
    stop = asyncio.Event()
    task = asyncio.create_task(sink.run(stop))
    try:
        await produce(kafka_settings, first)
        await until("the first events", lambda: sink.rows_written == len(before), task, 60)
        await until("no lag", lambda: sink.lag_messages == 0, task, 10)
        assert await committed(kafka_settings, sink) == len(first)

        own_clickhouse.stop()
        await produce(kafka_settings, second)
        await until("lag of the second lot", lambda: sink.lag_messages == len(second), task, 20)
        await produce(kafka_settings, third)
        total = len(second) + len(third)
        await until("lag of the third lot", lambda: sink.lag_messages == total, task, 20)
        await asyncio.sleep(1.5)  # several failed retries: still alive, still nothing committed
        assert not task.done()
        assert sink.rows_written == len(before)
        assert await committed(kafka_settings, sink) == len(first)

        own_clickhouse.start()
        events = before + during + after
        await until("every event", lambda: sink.rows_written == len(events), task, 30)
        await until("no lag after the outage", lambda: sink.lag_messages == 0, task, 10)
        assert await committed(kafka_settings, sink) == len(first) + total
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)

    with connect(clickhouse) as client:
        for final in ("", "FINAL"):
            count, distinct = client.query(
                f"SELECT count(), uniqExact(event_id) FROM events {final}"
            ).result_rows[0]
            assert (count, distinct) == (len(events), len(events)), final
        samples = client.query("SELECT count() FROM gpu_samples").result_rows[0][0]
    assert samples == sum(e.type == "GpuSampled" for e in events)


async def test_sink_started_while_kafka_is_away_waits_for_it(
    clickhouse_settings: ClickHouseSettings, unique: str
) -> None:
    """No broker at start is an outage like any other: waited out, not an exit."""
    away = KafkaSettings(bootstrap=f"127.0.0.1:{free_port()}", topic_prefix=f"t{unique}.")
    sink = HistorySink(away, clickhouse_settings, SinkSettings(group_id=f"sink-{unique}"))
    stop = asyncio.Event()
    task = asyncio.create_task(sink.run(stop))
    try:
        await asyncio.sleep(3.0)  # several tries to connect
        assert not task.done(), task
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)  # and it stops cleanly meanwhile
    assert sink.records_fetched == 0
