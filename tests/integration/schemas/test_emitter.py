"""The Emitter on the real broker: delivery, batching, dead letters, the sync face."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from schemas import limits
from schemas.codec import MAX_MESSAGE_BYTES, MessageTooLarge, decode
from schemas.deadletter import DeadLetter
from schemas.events import GpuSampled, JobExited, LogLinesObserved
from schemas.runtime.deadletter import DEAD_LETTER_COUNTS
from schemas.runtime.emitter import Emitter, EmitterSettings, SyncEmitter
from schemas.runtime.settings import KafkaSettings
from streams.testing import envelope
from tests.factories import exited
from tests.kafka_helpers import read_events, read_messages

pytestmark = pytest.mark.integration


def options(tmp_path: Path, **overrides: object) -> EmitterSettings:
    return EmitterSettings(spool_dir=tmp_path / "spool", **overrides)  # type: ignore[arg-type]


def gpu_sample(node: str, gpu: int) -> GpuSampled:
    return GpuSampled(**envelope(node), payload={"gpu": gpu, "utilization_pct": 50.0})


async def test_events_arrive_keyed_by_subject(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    events = [exited(attempt=n, subject=f"slurm/t/{n % 3}") for n in range(1, 31)]
    async with Emitter(kafka_settings, options(tmp_path)) as emitter:
        for e in events:
            await emitter.emit(e)
    got = await read_events(kafka_settings, "jobs")
    assert sorted(str(e.event_id) for e in got) == sorted(str(e.event_id) for e in events)
    for subject in {e.subject for e in events}:  # order per key holds
        assert [e.event_id for e in got if e.subject == subject] == [
            e.event_id for e in events if e.subject == subject
        ]


async def test_high_volume_families_travel_batched(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    samples = [gpu_sample(f"node-{n}", gpu) for n in range(2) for gpu in range(8)] * 5
    async with Emitter(kafka_settings, options(tmp_path, batch_linger_ms=10_000)) as emitter:
        for s in samples:
            await emitter.emit(s)
    messages = await read_messages(kafka_settings, "gpu")
    assert len(messages) == 2  # one per node, flushed at stop
    assert sorted(len(decode(m)) for m in messages) == [40, 40]


async def test_batch_size_is_bounded(kafka_settings: KafkaSettings, tmp_path: Path) -> None:
    async with Emitter(
        kafka_settings, options(tmp_path, batch_max_events=16, batch_linger_ms=10_000)
    ) as emitter:
        for gpu in range(40):
            await emitter.emit(gpu_sample("node-0", gpu % 8))
    sizes = [len(decode(m)) for m in await read_messages(kafka_settings, "gpu")]
    assert sizes == [16, 16, 8]


async def test_dead_letters_are_sent_and_counted(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    before = DEAD_LETTER_COUNTS[("test-consumer", "malformed")]
    letter = DeadLetter(
        reason="malformed",
        detail="x",
        consumer="test-consumer",
        topic="t",
        partition=0,
        offset=7,
        raw=b"\x00not json",
    )
    async with Emitter(kafka_settings, options(tmp_path)) as emitter:
        await emitter.dead_letter(letter)
    [raw] = await read_messages(kafka_settings, "deadletter")
    back = DeadLetter.from_bytes(raw)
    assert back.raw == b"\x00not json" and back.offset == 7 and back.reason == "malformed"
    assert DEAD_LETTER_COUNTS[("test-consumer", "malformed")] == before + 1


def test_sync_emitter(kafka_settings: KafkaSettings, tmp_path: Path) -> None:
    events = [exited(attempt=n) for n in range(1, 4)]
    with SyncEmitter(kafka_settings, options(tmp_path)) as emitter:
        for e in events:
            emitter.emit(e)
    import asyncio

    got = asyncio.run(read_events(kafka_settings, "jobs"))
    assert [e.event_id for e in got] == [e.event_id for e in events]


async def test_stopping_while_the_linger_flushes_loses_no_batch(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    """Unbatched events are awaited one by one, so a 1 ms linger gets to flush between them and
    `stop()` lands in the middle of a flush: the batches it had taken must still go out."""
    sent = []
    for run in range(5):
        async with Emitter(kafka_settings, options(tmp_path, batch_linger_ms=1)) as emitter:
            for n in range(20):
                samples = [gpu_sample(f"node-{run}-{n}", gpu) for gpu in range(8)]
                for s in samples:
                    await emitter.emit(s)
                await emitter.emit(exited(attempt=1, subject=f"slurm/t/{run}-{n}"))
                sent += samples
    got = {e.event_id for m in await read_messages(kafka_settings, "gpu") for e in decode(m)}
    assert len(got) == len(sent)


def big_exit(n: int, node_chars: int, nodes: int) -> JobExited:
    names = [f"{i:0{node_chars}d}" for i in range(nodes)]
    return JobExited(
        **envelope("slurm/t/big"), payload={"state": "FAILED", "attempt": n, "nodes": names}
    )


async def test_no_message_exceeds_the_limit(kafka_settings: KafkaSettings, tmp_path: Path) -> None:
    """A batch past the message limit goes as several messages, in order; an event no message
    can carry is refused before anything is sent."""
    events = [big_exit(n, 20, 10_000) for n in range(1, 7)]  # ~230 KB each
    too_big = big_exit(99, limits.NODE_NAME, limits.MAX_NODES)  # valid, but ~4 MB encoded
    async with Emitter(kafka_settings, options(tmp_path)) as emitter:
        with pytest.raises(MessageTooLarge, match="limit"):
            await emitter.emit(too_big)
        with pytest.raises(MessageTooLarge):
            await emitter.emit_batch([events[0], too_big])
        await emitter.emit_batch(events)
    messages = await read_messages(kafka_settings, "jobs")
    assert len(messages) > 1 and all(len(m) <= MAX_MESSAGE_BYTES for m in messages)
    got = [e for m in messages for e in decode(m)]
    assert [e.event_id for e in got] == [e.event_id for e in events]


async def test_batched_families_split_at_the_message_limit(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    lines = [{"line": "x" * limits.LOG_LINE}] * 20  # ~330 KB an event
    events = [
        LogLinesObserved(**envelope("slurm/t/logs"), payload={"lines": lines}) for _ in range(7)
    ]
    settings = options(tmp_path, batch_max_bytes=MAX_MESSAGE_BYTES, batch_linger_ms=60_000)
    async with Emitter(kafka_settings, settings) as emitter:
        for e in events:
            await emitter.emit(e)
    messages = await read_messages(kafka_settings, "logs")
    assert all(len(m) <= MAX_MESSAGE_BYTES for m in messages)
    assert [e.event_id for m in messages for e in decode(m)] == [e.event_id for e in events]


async def _limited_catalog(settings: KafkaSettings, max_bytes: int) -> KafkaSettings:
    """Settings whose `jobs` topic refuses records over `max_bytes`, from its creation on.

    Altering an existing topic's limit is applied by the broker asynchronously, so a record sent
    right after could still be accepted; a topic created with the limit has it from the start.
    """
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    from schemas.runtime.admin import ensure_topics
    from schemas.topics import CATALOG, TopicSettings

    limited = settings.model_copy(update={"topic_prefix": f"{settings.topic_prefix}limited."})
    spec = next(s for s in CATALOG if s.name == "jobs")
    layout = TopicSettings().of(spec.family)
    configs = {**spec.configs(layout), "max.message.bytes": str(max_bytes)}
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap)
    await admin.start()
    try:
        await admin.create_topics(
            [NewTopic(spec.full_name(limited), layout.partitions, 1, topic_configs=configs)]
        )
    finally:
        await admin.close()
    await ensure_topics(limited)
    return limited


async def test_a_record_the_broker_refuses_is_refused_not_spooled_and_blocks_nothing(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    from schemas.codec import encode
    from schemas.runtime.emitter.core import RecordRefused
    from schemas.runtime.emitter.spool import Spool, SpooledRecord
    from schemas.topics import topic_name

    kafka_settings = await _limited_catalog(kafka_settings, 2048)
    topic = topic_name("jobs", kafka_settings)
    big = exited(subject="slurm/t/big").model_copy(
        update={"payload": exited().payload.model_copy(update={"reason": "x" * 4000})}
    )
    small = [exited(attempt=n, subject="slurm/t/small") for n in (1, 2, 3)]
    # Spooled while Kafka was away, before the topic's limit was lowered: one of them can never
    # be sent, and must not hold the others behind it.
    spool = Spool(tmp_path / "spool", 1 << 20)
    spool.append([SpooledRecord(topic, e.key, encode(e), []) for e in (small[0], big, small[1])])
    spool.close()
    async with Emitter(kafka_settings, options(tmp_path)) as emitter:
        await emitter.emit(small[2])  # behind the spool: drained in order after it
        for _ in range(200):  # the spool drains, the refused record dropped on the way
            if emitter.spool.empty:
                break
            await asyncio.sleep(0.05)
        assert emitter.spool.empty
        # Sent directly, the refusal reaches the caller: the event was not accepted.
        with pytest.raises(RecordRefused, match="refused"):
            await emitter.emit(big.model_copy(update={"subject": "slurm/t/big2"}))
    got = await read_events(kafka_settings, "jobs")
    assert sorted(str(e.event_id) for e in got) == sorted(str(e.event_id) for e in small)
    assert Spool(tmp_path / "spool", 1 << 20).empty
