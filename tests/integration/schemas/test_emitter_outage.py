"""A broker outage while the Emitter sends loses nothing: the spool holds it, in order per key;
a consumer stopped meanwhile stops quietly.

This test runs its own broker, since it kills it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer

from centrality.stack.kafka import LocalKafka
from centrality.stack.settings import StackSettings
from schemas.codec import decode, encode
from schemas.events import GpuSampled
from schemas.runtime import kafka_clients
from schemas.runtime.admin import ensure_topics
from schemas.runtime.emitter import Emitter, EmitterSettings, SpoolFullError
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name
from streams.testing import envelope
from tests.factories import exited
from tests.kafka_helpers import read_events
from tests.ports import free_ports

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def own_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafka]:
    port, controller = free_ports(2)
    kafka = LocalKafka(
        StackSettings(
            state_dir=tmp_path_factory.mktemp("outage"),
            kafka_port=port,
            kafka_controller_port=controller,
            kafka_heap_mb=384,
        )
    )
    kafka.start()
    yield kafka
    kafka.stop()


def kill_broker(kafka: LocalKafka) -> None:
    pid = kafka.pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while kafka.running() and time.monotonic() < deadline:
        time.sleep(0.05)


async def wait_drained(emitter: Emitter, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not emitter.spool.empty:
        assert time.monotonic() < deadline, "spool not drained after the broker came back"
        await asyncio.sleep(0.2)


async def test_broker_outage_mid_stream_loses_nothing(
    own_kafka: LocalKafka, tmp_path: Path
) -> None:
    settings = KafkaSettings(bootstrap=own_kafka.bootstrap, topic_prefix="outage.")
    await ensure_topics(settings)
    events = [exited(attempt=n, subject=f"slurm/o/{n % 2}") for n in range(1, 201)]
    options = EmitterSettings(spool_dir=tmp_path / "spool", delivery_timeout_ms=1500)
    async with Emitter(settings, options) as emitter:
        for e in events[:100]:
            await emitter.emit(e)
        kill_broker(own_kafka)
        for e in events[100:]:
            await emitter.emit(e)  # returns once spooled: the broker is gone
        assert not emitter.spool.empty
        await asyncio.to_thread(own_kafka.start)
        await wait_drained(emitter, 90)

    got = await read_events(settings, "jobs")
    assert {e.event_id for e in got} == {e.event_id for e in events}
    for subject in ("slurm/o/0", "slurm/o/1"):
        seen: list[object] = []
        for e in got:  # a redelivered duplicate is fine (event_id dedupes); order is not optional
            if e.subject == subject and e.event_id not in seen:
                seen.append(e.event_id)
        assert seen == [e.event_id for e in events if e.subject == subject]


async def test_started_without_broker_delivers_later(own_kafka: LocalKafka, tmp_path: Path) -> None:
    settings = KafkaSettings(bootstrap=own_kafka.bootstrap, topic_prefix="late.")
    await ensure_topics(settings)
    own_kafka.stop()
    events = [exited(attempt=n, subject="slurm/late/1") for n in range(1, 11)]
    options = EmitterSettings(spool_dir=tmp_path / "spool", delivery_timeout_ms=1000)
    async with Emitter(settings, options) as emitter:
        for e in events:
            await emitter.emit(e)
        assert len(emitter.spool) == 10
        await asyncio.to_thread(own_kafka.start)
        await wait_drained(emitter, 90)
    got = await read_events(settings, "jobs")
    assert [e.event_id for e in got] == [e.event_id for e in events]


async def test_spool_survives_the_producer_process(own_kafka: LocalKafka, tmp_path: Path) -> None:
    """Spooled while the broker is down, the emitter stops; a new one delivers it later."""
    settings = KafkaSettings(bootstrap=own_kafka.bootstrap, topic_prefix="restart.")
    await ensure_topics(settings)
    own_kafka.stop()
    options = EmitterSettings(spool_dir=tmp_path / "spool", delivery_timeout_ms=1000)
    events = [exited(attempt=n, subject="slurm/r/1") for n in range(1, 6)]
    async with Emitter(settings, options) as emitter:
        for e in events:
            await emitter.emit(e)
    await asyncio.to_thread(own_kafka.start)
    async with Emitter(settings, options) as emitter:
        await wait_drained(emitter, 90)
    got = await read_events(settings, "jobs")
    assert [e.event_id for e in got] == [e.event_id for e in events]


async def test_full_spool_refuses_loudly(own_kafka: LocalKafka, tmp_path: Path) -> None:
    own_kafka.stop()
    settings = KafkaSettings(bootstrap=own_kafka.bootstrap, topic_prefix="full.")
    options = EmitterSettings(spool_dir=tmp_path / "spool", spool_max_bytes=2048)
    emitter = Emitter(settings, options)
    await emitter.start()
    try:
        with pytest.raises(SpoolFullError, match="full"):
            for n in range(1, 100):
                await emitter.emit(exited(attempt=n))
        accepted = len(emitter.spool)
        assert 0 < accepted < 99
    finally:
        await emitter.stop(drain_timeout_s=0.1)
        await asyncio.to_thread(own_kafka.start)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 256 KiB filesystem. Mounting needs root: without it the test fails, never skips."""
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount_point)],
        check=True,
        capture_output=True,
    )
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


async def test_spool_on_a_full_disk_refuses_and_keeps_what_it_accepted(
    own_kafka: LocalKafka, tiny_disk: Path
) -> None:
    """The policy: an event the disk cannot take is refused (SpoolFullError, saying the disk is
    full); every event accepted before stays intact on disk and is delivered once Kafka is back."""
    own_kafka.stop()
    settings = KafkaSettings(bootstrap=own_kafka.bootstrap, topic_prefix=f"disk{os.getpid()}.")
    options = EmitterSettings(spool_dir=tiny_disk / "spool", spool_max_bytes=1 << 30)
    accepted = []
    emitter = Emitter(settings, options)
    await emitter.start()
    try:
        with pytest.raises(SpoolFullError, match="disk is full"):
            for n in range(1, 100_000):
                event = exited(attempt=n, subject=f"slurm/t/{n % 4}")
                await emitter.emit(event)
                accepted.append(event)
        assert len(accepted) > 100  # the bytes bound (1 GiB) was not what stopped it
        with pytest.raises(SpoolFullError, match="disk is full"):
            await emitter.emit(exited(attempt=100_000))
        # Nothing torn or half-written: exactly the accepted events wait, in order.
        assert [r.value for _, r in emitter.spool.pending()] == [encode(e) for e in accepted]
    finally:
        await emitter.stop(drain_timeout_s=0.1)
        await asyncio.to_thread(own_kafka.start)
    await ensure_topics(settings)
    async with Emitter(settings, options) as emitter:
        await wait_drained(emitter, 90)
    got = await read_events(settings, "jobs")
    assert sorted(str(e.event_id) for e in got) == sorted(str(e.event_id) for e in accepted)


async def test_batched_events_wait_in_bounded_memory_then_are_refused(
    own_kafka: LocalKafka, tmp_path: Path
) -> None:
    """Batched families: while neither Kafka nor the spool takes a batch, accepted events wait in
    memory up to `pending_max_bytes`; past it `emit` refuses. Nothing accepted is dropped."""
    own_kafka.stop()
    settings = KafkaSettings(bootstrap=own_kafka.bootstrap, topic_prefix=f"mem{os.getpid()}.")
    options = EmitterSettings(
        spool_dir=tmp_path / "spool",
        spool_max_bytes=16_384,
        batch_max_events=10,
        batch_linger_ms=60_000,
        pending_max_bytes=8192,
    )
    accepted = []
    emitter = Emitter(settings, options)
    await emitter.start()
    try:
        with pytest.raises(SpoolFullError):
            for n in range(10_000):
                sample = GpuSampled(**envelope("node-1"), payload={"gpu": n % 8})
                await emitter.emit(sample)
                accepted.append(sample)
        spooled = [e for _, r in emitter.spool.pending() for e in decode(r.value)]
        assert spooled == accepted[: len(spooled)]  # the spool took whole batches, in order
        held = len(accepted) - len(spooled)
        assert held > 0 and emitter._batcher.size_bytes >= options.pending_max_bytes
        assert emitter._batcher.size_bytes < options.pending_max_bytes + 4096  # bounded
        # Stopping cannot place what memory holds: it says so rather than losing it quietly.
        with pytest.raises(SpoolFullError):
            await emitter.stop(drain_timeout_s=0.1)
    except BaseException:
        with contextlib.suppress(SpoolFullError):
            await emitter.stop(drain_timeout_s=0.1)
        raise
    finally:
        await asyncio.to_thread(own_kafka.start)


async def test_a_consumer_stopped_while_the_broker_is_away_stops_quietly(
    own_kafka: LocalKafka,
) -> None:
    """aiokafka's own stop raises the CancelledError of a fetch that was backing off (a worker
    stopped during an outage ended with a traceback); `kafka_clients.stop` does not."""
    settings = KafkaSettings(bootstrap=own_kafka.bootstrap, topic_prefix="stop.")
    await ensure_topics(settings)

    async def fetching() -> AIOKafkaConsumer:
        consumer = kafka_clients.consumer(settings, topic_name("jobs", settings))
        await consumer.start()
        await consumer.getmany(timeout_ms=500)
        return consumer

    aiokafkas, ours = await fetching(), await fetching()
    kill_broker(own_kafka)
    try:
        for consumer in (aiokafkas, ours):
            await consumer.getmany(timeout_ms=1000)  # its fetches now back off
        with pytest.raises(asyncio.CancelledError):
            await aiokafkas.stop()
        await kafka_clients.stop(ours)
    finally:
        await asyncio.to_thread(own_kafka.start)
