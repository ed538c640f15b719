"""`centrality bench streams`: the real streams worker over a filled topic set, next to a raw
aiokafka loop folding the same messages with the same pure Brain, then the produce→trigger
latency under a steady background load."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import socket
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import typer
from aiokafka import TopicPartition
from rich.console import Console

from centrality.bench.cli import bench_app, report
from centrality.bench.history_data import job_run, node_telemetry
from centrality.bench.hostile_watch import cpu_s
from centrality.bench.run import delete_topics
from centrality.stack.process import ManagedProcess, ServiceError
from schemas.codec import decode, encode, encode_batch
from schemas.events import JobExited
from schemas.runtime import kafka_clients
from schemas.runtime.admin import ensure_topics
from schemas.runtime.metrics.server import http_ok
from schemas.runtime.settings import KafkaSettings
from schemas.topics import partition_count, topic_name
from streams.brain.process import Brain
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings

TOPICS = ("jobs", "nodes", "gpu")
Message = tuple[str, bytes, bytes, int]  # topic, key, value, events


def workload(nodes: int, minutes: int, jobs: int, now: datetime) -> list[Message]:
    """Node telemetry as the agent sends it (a heartbeat, and 8 GPU samples in one message, per
    node and minute) and job runs on pairs of those nodes, a fifth of them crashing."""
    start = now - timedelta(minutes=minutes)
    names = [f"bn-{i:03d}" for i in range(nodes)]
    rng = random.Random(5)
    timed: list[tuple[datetime, Message]] = []
    for name in names:
        events = node_telemetry(name, start, now, "bench", sick=name == names[0])
        for i in range(0, len(events), 9):
            beat, samples = events[i], events[i + 1 : i + 9]
            timed.append((beat.occurred_at, ("nodes", beat.key, encode(beat), 1)))
            batch = encode_batch(samples)
            timed.append((beat.occurred_at, ("gpu", beat.key, batch, len(samples))))
    for j in range(jobs):
        at = start + timedelta(seconds=rng.uniform(0, minutes * 60))
        nodes_of_job = rng.sample(names, 2)
        for event in job_run(f"slurm/bench/{j}", nodes_of_job, at, "bench", crash=j % 5 == 0):
            if event.topic == "jobs":
                timed.append((event.occurred_at, ("jobs", event.key, encode(event), 1)))
    return [m for _, m in sorted(timed, key=lambda tm: tm[0])]  # stable: per-key order kept


async def fill(kafka: KafkaSettings, messages: list[Message]) -> None:
    producer = kafka_clients.producer(kafka, linger_ms=20)
    await producer.start()
    try:
        for topic, key, value, _ in messages:
            await producer.send(topic_name(topic, kafka), value, key=key)
        await producer.flush()
    finally:
        await producer.stop()


def _partitions(kafka: KafkaSettings) -> list[TopicPartition]:
    return [
        TopicPartition(topic_name(t, kafka), p) for t in TOPICS for p in range(partition_count(t))
    ]


async def end_offsets(kafka: KafkaSettings) -> dict[TopicPartition, int]:
    consumer = kafka_clients.consumer(kafka)
    await consumer.start()
    try:
        return dict(await consumer.end_offsets(_partitions(kafka)))
    finally:
        await consumer.stop()


async def raw_loop(kafka: KafkaSettings, ends: dict[TopicPartition, int]) -> tuple[int, float]:
    """The same messages through aiokafka + decode + the pure Brain; (events, events/s)."""
    brain = Brain(RuleEngine.load(StreamsSettings().rule_modules, {}))
    consumer = kafka_clients.consumer(
        kafka,
        enable_auto_commit=False,
        max_partition_fetch_bytes=4 << 20,
    )
    await consumer.start()
    events = 0
    try:
        consumer.assign(list(ends))
        await consumer.seek_to_beginning(*ends)
        done: dict[TopicPartition, int] = dict.fromkeys(ends, 0)
        started = 0.0
        while any(done[tp] < ends[tp] for tp in ends):
            batch = await consumer.getmany(timeout_ms=500, max_records=5000)
            for tp, records in batch.items():
                started = started or time.perf_counter()
                for record in records:
                    if record.offset >= ends[tp]:
                        break  # the latency phase's messages: not part of the filled set
                    for event in decode(record.value):
                        brain.handle(event)
                        events += 1
                done[tp] = records[-1].offset + 1
        return events, events / (time.perf_counter() - started)
    finally:
        await consumer.stop()


async def all_committed(
    kafka: KafkaSettings, group: str, ends: dict[TopicPartition, int], timeout_s: float
) -> float:
    """The moment (`time.perf_counter()`) the worker's group has committed every filled record."""
    admin = kafka_clients.admin(kafka)
    await admin.start()
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            committed = await admin.list_consumer_group_offsets(group, partitions=list(ends))
            offsets = {tp: meta.offset for tp, meta in committed.items() if meta.offset >= 0}
            if all(offsets.get(tp, 0) >= end for tp, end in ends.items()):
                return time.perf_counter()
            await asyncio.sleep(0.05)
        raise TimeoutError(f"the streams worker did not finish within {timeout_s} s")
    finally:
        await admin.close()


def _ready(url: str) -> bool:
    with contextlib.suppress(OSError):  # not listening yet, or 503: not ready
        return http_ok(url)()
    return False


def wait_ready(worker: ManagedProcess, url: str, timeout_s: float) -> float:
    """The moment the worker's `/readyz` first answers 200: partitions assigned, tables
    recovered. Polled every 20 ms: the clock starts where the worker can start consuming."""
    deadline = time.monotonic() + timeout_s
    while not _ready(url):
        if worker.pid() is None or time.monotonic() > deadline:
            raise ServiceError(f"the streams worker never got ready:\n{worker.log_tail(20)}")
        time.sleep(0.02)
    return time.perf_counter()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _probe(job: str) -> JobExited:
    return JobExited(
        source="bench",
        cluster="bench",
        subject=job,
        occurred_at=datetime.now(UTC),
        payload={"state": "FAILED", "exit_code": 1, "nodes": ()},
    )


def _background(nodes: int) -> Iterator[tuple[bytes, bytes]]:
    while True:
        now = datetime.now(UTC)
        for n in range(nodes):
            events = node_telemetry(
                f"bg-{n:03d}", now, now + timedelta(seconds=1), "bench", sick=False
            )
            yield events[0].key, encode_batch(events[1:])


def _restarted(value: bytes) -> list[str]:
    """The jobs a trigger record restarts. Read without this checkout's contract: an older
    worker's triggers (`--worker-from`) may not validate against it."""
    with contextlib.suppress(orjson.JSONDecodeError, TypeError, AttributeError):
        events = orjson.loads(value)
        events = events if isinstance(events, list) else [events]
        return [e.get("subject") for e in events if e.get("type") == "RestartJob"]
    return []


async def latency(kafka: KafkaSettings, duration_s: float, background_eps: int) -> list[float]:
    """Milliseconds from producing a crashed job's exit to receiving its RestartJob."""
    sent: dict[str, float] = {}
    got: dict[str, float] = {}
    triggers = kafka_clients.consumer(
        kafka, topic_name("triggers", kafka), auto_offset_reset="latest"
    )
    await triggers.start()
    await triggers.seek_to_end()
    producer = kafka_clients.producer(kafka, linger_ms=5)
    await producer.start()
    stop, sending_done, all_received = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def receive() -> None:
        while not stop.is_set():
            for records in (await triggers.getmany(timeout_ms=100)).values():
                at = time.perf_counter()
                for record in records:
                    for subject in _restarted(record.value):
                        if subject in sent:
                            got.setdefault(subject, at)
            if sending_done.is_set() and len(got) >= len(sent):
                all_received.set()

    receiver = asyncio.create_task(receive())
    background = _background(64)
    gpu, jobs = topic_name("gpu", kafka), topic_name("jobs", kafka)
    tick_s, probes_per_tick = 0.05, 1
    per_tick = max(1, round(background_eps * tick_s / 8))
    started = time.perf_counter()
    for i in range(int(duration_s / tick_s)):
        for _ in range(per_tick):
            key, value = next(background)
            await producer.send(gpu, value, key=key)
        for p in range(probes_per_tick):
            probe = _probe(f"bench-probe/{i}-{p}")
            sent[probe.subject] = time.perf_counter()
            await producer.send(jobs, encode(probe), key=probe.key)
        await asyncio.sleep(max(0.0, started + (i + 1) * tick_s - time.perf_counter()))
    sending_done.set()
    await producer.flush()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(all_received.wait(), 15)
    stop.set()
    await receiver
    await producer.stop()
    await triggers.stop()
    missing = set(sent) - set(got)
    if missing:
        raise RuntimeError(f"{len(missing)} of {len(sent)} probes never produced a RestartJob")
    return [1000 * (got[k] - sent[k]) for k in sent]


@dataclass(frozen=True)
class StreamsOptions:
    latency_s: float
    background_eps: int
    worker_from: Path | None


@dataclass(frozen=True)
class WorkerRun:
    """The worker over the filled topics: from `/readyz` (assigned, recovered) to its commit of
    the last filled record. Timed from readiness, not from its first commit: when the first
    commit lands depends on the commit timer and on what the worker reads first, not on its
    speed (an older worker that committed late looked three times as fast)."""

    busy_s: float
    cpu_s: float  # its process group's user and system CPU over busy_s
    ready_s: float  # from its process's start to `/readyz`: imports, joining, recovery
    stop_s: float  # from SIGTERM to its process's end (looked at every 0.1 s)
    latencies_ms: list[float]


def run_worker(
    kafka: KafkaSettings, group: str, ends: dict[TopicPartition, int], opts: StreamsOptions
) -> WorkerRun:
    data_dir = Path(tempfile.mkdtemp(prefix="bench-streams-"))
    worker, port = ManagedProcess("streams", data_dir), free_port()
    env = {
        "CENTRALITY_KAFKA_TOPIC_PREFIX": kafka.topic_prefix,
        "CENTRALITY_STREAMS_APP_ID": group,
        # The bench's own key unless one is configured: the worker refuses to start without.
        "CENTRALITY_TRIGGER_KEY": os.environ.get("CENTRALITY_TRIGGER_KEY", uuid.uuid4().hex),
        "CENTRALITY_STREAMS_DATA_DIR": str(data_dir / "tables"),
        "CENTRALITY_STREAMS_COMMIT_INTERVAL_S": "0.2",
        "CENTRALITY_METRICS_ADDR": f"127.0.0.1:{port}",
    }
    checkout = None if opts.worker_from is None else opts.worker_from.resolve()
    if checkout is not None:  # its modules first, run from there (Faust imports from the cwd)
        env["PYTHONPATH"] = str(checkout)
    argv = [str(Path(sys.executable).with_name("centrality")), "streams"]
    started_at = time.perf_counter()
    pid = worker.start(argv, env=env, cwd=checkout)
    try:
        ready_at = wait_ready(worker, f"http://127.0.0.1:{port}/readyz", timeout_s=180)
        cpu_ready = cpu_s({"streams": pid})["streams"]
        done_at = asyncio.run(all_committed(kafka, group, ends, timeout_s=600))
        cpu_used = cpu_s({"streams": pid})["streams"] - cpu_ready
        Console(stderr=True).log(
            f"streams worker: through in {done_at - ready_at:.2f} s from ready"
        )
        probing = opts.latency_s > 0
        lat = asyncio.run(latency(kafka, opts.latency_s, opts.background_eps)) if probing else []
    except Exception:
        Console(stderr=True).log(f"streams worker log {worker.log_file}:\n{worker.log_tail(20)}")
        raise
    finally:
        stopping_at = time.perf_counter()
        worker.stop()  # before removing data_dir: its pid file lives there
        stopped_at = time.perf_counter()
    shutil.rmtree(data_dir, ignore_errors=True)
    return WorkerRun(
        done_at - ready_at,
        cpu_used,
        ready_at - started_at,
        stopped_at - stopping_at,
        sorted(lat),
    )


@bench_app.command("streams")
def bench_streams(
    nodes: int = typer.Option(128, help="Simulated nodes (8 GPUs each, sampled every minute)."),
    minutes: int = typer.Option(60, help="Minutes of telemetry in the filled topics."),
    jobs: int = typer.Option(400, help="Job runs in the filled topics (a fifth crash)."),
    latency_s: float = typer.Option(
        20.0, help="How long to probe latency under load; 0 skips the probe."
    ),
    background_eps: int = typer.Option(5000, help="Background GPU samples per second."),
    worker_from: str | None = typer.Option(
        None,
        help="Run the worker of this checkout (an older commit's worktree) instead, to compare "
        "commits in the same minutes; the raw loop stays this checkout's.",
    ),
    json: bool = typer.Option(False, "--json", help="Print one JSON line."),
) -> None:
    """Streams worker rate vs a raw aiokafka loop (target ≥ 50%), and p50/p99 latency (≤ 1 s)."""
    run = uuid.uuid4().hex[:8]
    kafka = KafkaSettings().model_copy(update={"topic_prefix": f"bench{run}."})
    group = f"bench-streams-{run}"
    opts = StreamsOptions(
        latency_s, background_eps, None if worker_from is None else Path(worker_from)
    )
    try:
        asyncio.run(ensure_topics(kafka))
        messages = workload(nodes, minutes, jobs, datetime.now(UTC))
        asyncio.run(fill(kafka, messages))
        Console(stderr=True).log(f"filled {len(messages)} messages on {kafka.topic_prefix}*")
        ends = asyncio.run(end_offsets(kafka))
        worked = run_worker(kafka, group, ends, opts)
        events, raw_rate = asyncio.run(raw_loop(kafka, ends))
    finally:  # the run's topics, its tables' changelogs too: never left behind
        asyncio.run(delete_topics(kafka, group))
    report("bench streams", _result(events, len(messages), worked, raw_rate, opts), json=json)


def _result(
    events: int, messages: int, worked: WorkerRun, raw_rate: float, opts: StreamsOptions
) -> dict[str, object]:
    rate, lat = events / worked.busy_s, worked.latencies_ms
    return {
        "events": events,
        "messages": messages,
        "rate_eps": round(rate),
        "worker_cpu_us_per_event": round(1e6 * worked.cpu_s / events, 1),
        "worker_ready_s": round(worked.ready_s, 2),
        "worker_stop_s": round(worked.stop_s, 2),
        "raw_rate_eps": round(raw_rate),
        "ratio": round(rate / raw_rate, 3),
        "latency_p50_ms": round(statistics.median(lat), 1) if lat else None,
        "latency_p99_ms": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 1) if lat else None,
        "probes": len(lat),
        "background_eps": opts.background_eps,
        "worker_from": None if opts.worker_from is None else str(opts.worker_from),
    }
