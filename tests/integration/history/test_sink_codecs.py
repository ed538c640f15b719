"""The sink reads batches from a librdkafka producer in every codec, and a batch it cannot
decompress is dead-lettered and read past, never fetched again (once it stopped the sink on every
restart, and with it every topic's history)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import aiokafka.codec
import pytest

from centrality.bench.history_data import incident
from schemas.codec import encode
from schemas.envelope import Event
from schemas.runtime.settings import KafkaSettings
from streams.history.client import connect
from streams.history.settings import ClickHouseSettings
from streams.history.sink import HistorySink, SinkSettings
from tests.integration.history.test_sink import scalar
from tests.support import foreign

pytestmark = pytest.mark.integration


def job_events(prefix: str) -> list[Event]:
    """Six job events of their own (ids, subjects), to tell them apart in ClickHouse."""
    jobs = [e for e in incident(datetime.now(UTC)) if e.topic == "jobs"][:6]
    assert len(jobs) == 6
    return [
        e.model_copy(update={"subject": f"{prefix}/{e.subject}", "event_id": uuid.uuid4()})
        for e in jobs
    ]


async def run_sink(sink: HistorySink, done: Callable[[], bool], timeout_s: float = 60) -> None:
    stop = asyncio.Event()
    task = asyncio.create_task(sink.run(stop))
    deadline = time.monotonic() + timeout_s
    try:
        while not done():
            assert not task.done(), f"the sink stopped: {task}"
            assert time.monotonic() < deadline, "timed out"
            await asyncio.wait([task], timeout=0.1)
    finally:
        stop.set()
        await asyncio.wait_for(task, 20)


async def test_every_codec_of_a_librdkafka_producer_is_read(
    kafka_settings: KafkaSettings, clickhouse_settings: ClickHouseSettings, unique: str
) -> None:
    sent = 0
    for codec in foreign.CODECS:
        events = job_events(codec)
        foreign.produce(kafka_settings, "jobs", codec, [(e.key, encode(e), []) for e in events])
        sent += len(events)
    sink = HistorySink(kafka_settings, clickhouse_settings, SinkSettings(group_id=f"s-{unique}"))
    count = "SELECT count() FROM events FINAL"
    await run_sink(sink, lambda: scalar(clickhouse_settings, count) >= sent)
    assert scalar(clickhouse_settings, count) == sent
    for codec in foreign.CODECS:
        got = scalar(
            clickhouse_settings, f"SELECT count() FROM events WHERE subject LIKE '{codec}/%'"
        )
        assert got == len(job_events(codec)), codec


async def test_batch_it_cannot_decompress_is_dead_lettered_and_read_past(
    kafka_settings: KafkaSettings,
    clickhouse_settings: ClickHouseSettings,
    unique: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As a sink without lz4 support met one lz4 batch: the batch becomes one dead letter, what
    comes before and after it on the same partition is written, and a restart reads on."""
    # One job, so one key and one partition, as the sink checks placement like the worker.
    key = b"slurm/c1/42"
    before, unreadable, after = (
        [e.model_copy(update={"subject": key.decode()}) for e in job_events(part)]
        for part in ("before", "lz4", "after")
    )
    plain = [(key, encode(e), []) for e in before]
    foreign.produce(kafka_settings, "jobs", "none", plain)
    foreign.produce(kafka_settings, "jobs", "lz4", [(key, encode(e), []) for e in unreadable])
    foreign.produce(kafka_settings, "jobs", "none", [(key, encode(e), []) for e in after])
    monkeypatch.setattr(aiokafka.codec, "cramjam", None)  # this process now lacks every codec

    settings = SinkSettings(group_id=f"s-{unique}", lag_log_interval_s=0.2)
    letters = "SELECT count() FROM dead_letters WHERE reason = 'codec'"
    events = "SELECT count() FROM events FINAL"
    await run_sink(
        HistorySink(kafka_settings, clickhouse_settings, settings),
        lambda: (
            scalar(clickhouse_settings, letters) >= 1 and scalar(clickhouse_settings, events) >= 12
        ),
    )
    restarted = HistorySink(kafka_settings, clickhouse_settings, settings)
    await run_sink(restarted, lambda: restarted.lag_messages == 0)  # committed past it
    assert scalar(clickhouse_settings, letters) == 1
    with connect(clickhouse_settings) as client:
        ids = {r[0] for r in client.query("SELECT event_id FROM events").result_rows}
        [(detail, offset)] = client.query(
            "SELECT detail, offset FROM dead_letters WHERE reason = 'codec'"
        ).result_rows
    assert ids == {e.event_id for e in before + after}
    assert offset == len(before) and "UnsupportedCodecError" in detail
