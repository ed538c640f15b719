"""The real streams worker against hostile, odd and foreign input (issue 12): it never stops
deciding, dead-letters what it cannot fold with the reason, reads every Kafka codec from a
librdkafka producer, and stops within 10 s of a signal whatever it is doing."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from collections import Counter
from pathlib import Path

import orjson
from confluent_kafka.admin import AdminClient

from schemas import limits
from schemas.codec import encode
from schemas.deadletter import DeadLetter
from schemas.envelope import Event
from schemas.placement import partition_for
from schemas.runtime.admin import ensure_topics
from schemas.runtime.settings import KafkaSettings
from schemas.topics import partition_count, topic_name
from streams.testing import checkpoint, ended, health, heartbeat, running, sample, xid
from tests.integration.streams.foreign import CODECS, committed_up_to_end, produce
from tests.integration.streams.test_streams_worker import emit, oracle
from tests.integration.streams.worker import StreamsWorker, trigger_counts
from tests.kafka_helpers import read_messages

STOP_LIMIT_S = 10.0
Message = tuple[str, bytes | None, bytes, int | None]  # topic, key, value, partition


def crash_story(job: str, nodes: tuple[str, ...]) -> list[Event]:
    return [checkpoint(100, job, at_s=0), ended(job, at_s=10, nodes=nodes)]


def placed(settings: KafkaSettings, event: Event) -> Message:
    return topic_name(event.topic, settings), event.subject.encode(), encode(event), None


def storm(settings: KafkaSettings, unique: str, count: int) -> tuple[list[Message], Counter[str]]:
    """`count` hostile messages to jobs and nodes, and how many of each misplacement."""
    rng = random.Random(12)
    jobs, nodes = topic_name("jobs", settings), topic_name("nodes", settings)
    valid: list[Event] = []
    for i in range(40):
        job, node = f"slurm/storm/{unique}-{i}", f"storm-{unique}-{i}"
        valid += [
            running(job, at_s=i, nodes=(node,)),
            checkpoint(i + 1, job, at_s=i + 1),
            ended(job, at_s=i + 2, nodes=(node,)),
            heartbeat(node, at_s=i),
            health(node, "dcgm", "CRITICAL", at_s=i),
            xid(node, 79, at_s=i),
        ]
    misplaced: Counter[str] = Counter()
    out: list[Message] = []
    for n in range(count):
        event = rng.choice(valid)
        topic, key, value, _ = placed(settings, event)
        kind = n % 12
        if kind == 0:
            value = rng.randbytes(rng.randrange(0, 2000))
        elif kind == 1:
            value = value[: rng.randrange(0, len(value))]
        elif kind == 2:  # the payload's bytes: a subject changed so would be a wrong key
            mutated, start = bytearray(value), value.index(b'"payload"')
            for _ in range(rng.randrange(1, 8)):
                mutated[rng.randrange(start, len(mutated))] = rng.randrange(256)
            value = bytes(mutated)
        elif kind == 3:
            doc = orjson.loads(value)
            field = rng.choice(sorted(doc["payload"]) or ["x"])
            doc["payload"][field] = rng.choice(
                [[1, 2], {"a": None}, "x" * 50, -(2**63), 1e308, True]
            )
            value = orjson.dumps(doc)
        elif kind == 4:
            value = orjson.dumps({**orjson.loads(value), "type": f"Unheard{n}"})
        elif kind == 5:
            stamp = rng.choice(
                ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "2026-06-30T23:59:60Z"]
            )
            value = orjson.dumps({**orjson.loads(value), "occurred_at": stamp})
        elif kind == 6:
            pass  # a valid event, where it belongs
        elif kind == 7:
            key = b"not-the-subject"
            misplaced["wrong-key"] += 1
        elif kind == 8:
            out.append(
                (
                    topic,
                    key,
                    value,
                    (partition_for(key, partition_count("jobs")) + 1) % partition_count("jobs"),
                )
            )
            misplaced["wrong-partition"] += 1
            continue
        elif kind == 9:
            topic = nodes if topic == jobs else jobs
            misplaced["wrong-topic"] += 1
        elif kind == 10:
            value = rng.choice([b"", b"null", b"[]", b"{}", b'"x"', b"1e999999"])
        else:
            value = b"[" * 5000 + b"]" * 5000  # deeper than the JSON parser recurses
        out.append((topic, key, value, None))
    # Past the contract's node limit: built without validation, as a foreign producer would.
    huge_job = ended(f"slurm/huge/{unique}")
    too_many = tuple(f"h{unique}-{i}" for i in range(limits.MAX_NODES + 1))
    huge_job = huge_job.model_copy(
        update={"payload": huge_job.payload.model_copy(update={"nodes": too_many})}
    )
    # Keyed short (key and value must fit one record); past the limit, so built unvalidated.
    long_subject = heartbeat("n1").model_copy(update={"subject": "n" * 500_000})
    out += [placed(settings, huge_job), (nodes, b"n" * 100, encode(long_subject), None)]
    huge_gpu = sample(f"storm-{unique}-0", at_s=5)  # a GPU index past the limit, unvalidated
    huge_gpu = huge_gpu.model_copy(
        update={"payload": huge_gpu.payload.model_copy(update={"gpu": 2**31 - 1})}
    )
    out += [placed(settings, huge_gpu)]
    return out, misplaced


def send_with_every_codec(bootstrap: str, messages: list[Message]) -> None:
    for i, codec in enumerate(CODECS):
        produce(bootstrap, messages[i :: len(CODECS)], codec)


def dead_letters(settings: KafkaSettings) -> list[DeadLetter]:
    return [DeadLetter.from_bytes(m) for m in asyncio.run(read_messages(settings, "deadletter"))]


def signal_and_time_stop(worker: StreamsWorker, sig: signal.Signals) -> float:
    """Seconds from `sig` (to the process group, as a terminal's Ctrl-C or a service manager
    sends it) until the worker is gone."""
    pid = worker.process.pid()
    assert pid is not None, worker.process.log_tail()
    started = time.monotonic()
    os.killpg(pid, sig)
    while worker.process.pid() is not None and time.monotonic() - started < 30:
        time.sleep(0.05)
    return time.monotonic() - started


def test_a_storm_never_stops_the_worker_deciding(
    kafka_settings: KafkaSettings, worker_env: dict[str, str], unique: str, tmp_path: Path
) -> None:
    env = {**worker_env, "CENTRALITY_STREAMS_COMMIT_INTERVAL_S": "0.5"}
    worker = StreamsWorker(env, tmp_path / "run")
    messages, misplaced = storm(kafka_settings, unique, 3000)
    story = crash_story(f"slurm/story/{unique}", (f"story-{unique}-1", f"story-{unique}-2"))
    expected, _ = oracle(story)
    app_id = env["CENTRALITY_STREAMS_APP_ID"]
    # consumed: the storm itself, and what it made the worker forward to itself
    consumed = [
        *(topic_name(t, kafka_settings) for t in ("jobs", "nodes")),
        f"{app_id}-forward",
        f"{app_id}-job-forward",
    ]
    worker.start()
    try:
        send_with_every_codec(kafka_settings.bootstrap, messages)
        asyncio.run(committed_up_to_end(kafka_settings.bootstrap, app_id, consumed, 120))
        worker.check()
        sent_at = time.monotonic()
        asyncio.run(emit(kafka_settings, story))
        counts = trigger_counts(kafka_settings, lambda c: set(c) >= expected, 30, worker.check)
        decided_s = time.monotonic() - sent_at
        letters = dead_letters(kafka_settings)  # the storm's: its offsets are all committed
        send_with_every_codec(kafka_settings.bootstrap, messages)  # a second storm, and mid-way:
        time.sleep(1.0)
        worker.check()
        stop_s = signal_and_time_stop(worker, signal.SIGINT)
    finally:
        worker.stop()
    assert set(counts) >= expected
    assert decided_s < 5.0, f"the story took {decided_s:.1f} s after the storm was consumed"
    assert stop_s <= STOP_LIMIT_S, f"stopping took {stop_s:.1f} s"
    by_reason = Counter(
        d.reason for d in {(d.topic, d.partition, d.offset): d for d in letters}.values()
    )
    for reason, sent in misplaced.items():  # each misplaced message, once, with its reason
        assert by_reason[reason] == sent, (reason, by_reason)
    assert by_reason["limit"] >= 2, by_reason  # the 500,000-character subject, the node list
    assert {"malformed", "invalid", "unknown-type"} <= set(by_reason), by_reason
    assert all(d.raw for d in letters if d.reason in misplaced)


def test_every_codec_from_librdkafka_is_read_and_decided_on(
    kafka_settings: KafkaSettings, worker_env: dict[str, str], unique: str, tmp_path: Path
) -> None:
    stories = {
        codec: crash_story(f"slurm/{codec}/{unique}", (f"{codec}-{unique}",)) for codec in CODECS
    }
    expected = {codec: oracle(story)[0] for codec, story in stories.items()}
    worker = StreamsWorker(worker_env, tmp_path / "run")
    worker.start()
    try:
        for codec, story in stories.items():
            produce(kafka_settings.bootstrap, [placed(kafka_settings, e) for e in story], codec)
        every = set().union(*expected.values())
        counts = trigger_counts(kafka_settings, lambda c: set(c) >= every, 60, worker.check)
    finally:
        worker.stop()
    for codec, ids in expected.items():
        assert ids <= set(counts), codec
    assert dead_letters(kafka_settings) == []


def _delete_topic(settings: KafkaSettings, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": settings.bootstrap})
    name = topic_name(topic, settings)
    for future in admin.delete_topics([name]).values():
        future.result(timeout=30)
    deadline = time.monotonic() + 30
    while name in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"{name} still there"
        time.sleep(0.2)


def _recreate_topics(settings: KafkaSettings) -> None:
    deadline = time.monotonic() + 60
    while True:  # the broker finishes a deletion in the background before a new creation
        try:
            asyncio.run(ensure_topics(settings))
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_the_worker_stops_within_10_s_while_its_sends_fail_and_loses_no_decision(
    kafka_settings: KafkaSettings, worker_env: dict[str, str], unique: str, tmp_path: Path
) -> None:
    """The triggers topic is gone (the broker cannot take the decision, a transient failure):
    the decision's send is being retried when SIGTERM comes. The worker stops in time, commits
    nothing it had not finished, and the decision is made once the topic is back. The topic goes
    while the worker runs: a worker refuses to start without it (`require_topics`)."""
    first = crash_story(f"slurm/first/{unique}", (f"first-{unique}",))
    story = crash_story(f"slurm/stuck/{unique}", (f"stuck-{unique}",))
    expected, _ = oracle(story)
    env = {**worker_env, "CENTRALITY_STREAMS_SEND_RETRY_S": "8"}  # each send waits 2 s
    worker = StreamsWorker(env, tmp_path / "run")
    worker.start()
    try:
        asyncio.run(emit(kafka_settings, first))  # a decision sent: the worker is running
        trigger_counts(kafka_settings, lambda c: set(c) >= oracle(first)[0], 60, worker.check)
        _delete_topic(kafka_settings, "triggers")
        asyncio.run(emit(kafka_settings, story))
        deadline = time.monotonic() + 60
        while "output_retry" not in worker.process.log_file.read_text():
            assert time.monotonic() < deadline, worker.process.log_tail(40)
            worker.check()
            time.sleep(0.2)
        stop_s = signal_and_time_stop(worker, signal.SIGTERM)
        _recreate_topics(kafka_settings)
        worker = StreamsWorker(worker_env, tmp_path / "run")
        worker.start()
        counts = trigger_counts(kafka_settings, lambda c: set(c) >= expected, 60, worker.check)
    finally:
        worker.stop()
    assert stop_s <= STOP_LIMIT_S, f"stopping took {stop_s:.1f} s"
    assert set(counts) >= expected
