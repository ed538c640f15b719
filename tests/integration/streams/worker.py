"""Helpers for running the real `centrality streams` worker against the test broker."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition

from centrality.stack.process import ManagedProcess
from collectors.events import Stamp
from schemas.codec import decode
from schemas.envelope import Event
from schemas.events import NodeHeartbeat
from schemas.events.nodes import NodeHeartbeatPayload
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from schemas.topics import partition_count, topic_name

SESSION_TIMEOUT_S = 6


class StreamsWorker:
    def __init__(self, env: dict[str, str], run_dir: Path) -> None:
        self.env = {
            **env,
            "CENTRALITY_STREAMS_TICK_INTERVAL_S": "3600",  # no wall-clock ticks in these tests
            "CENTRALITY_STREAMS_SESSION_TIMEOUT_S": str(SESSION_TIMEOUT_S),
        }
        self.process = ManagedProcess("streams", run_dir)

    def start(self) -> None:
        cli = Path(sys.executable).with_name("centrality")
        self.process.start([str(cli), "streams"], env=self.env)

    def kill9(self) -> None:
        pid = self.process.pid()
        assert pid is not None, self.process.log_tail()
        os.killpg(pid, signal.SIGKILL)
        while self.process.pid() is not None:
            time.sleep(0.05)

    def freeze(self, duration_s: float) -> None:
        """Stop the worker dead (SIGSTOP) for `duration_s`, then let it go on (SIGCONT)."""
        pid = self.process.pid()
        assert pid is not None, self.process.log_tail()
        os.killpg(pid, signal.SIGSTOP)
        try:
            time.sleep(duration_s)
        finally:
            os.killpg(pid, signal.SIGCONT)

    def stop(self) -> None:
        self.process.stop()

    def check(self) -> None:
        if self.process.pid() is None:
            raise RuntimeError(f"streams worker died:\n{self.process.log_tail(60)}")


def ticking_worker(env: dict[str, str], run_dir: Path, limit_s: float) -> StreamsWorker:
    """A worker whose clock ticks every second, with `heartbeat_lost`'s limit at `limit_s`."""
    config = orjson.dumps({"heartbeat_lost": {"limit_s": limit_s}}).decode()
    worker = StreamsWorker({**env, "CENTRALITY_STREAMS_RULE_CONFIG": config}, run_dir)
    worker.env["CENTRALITY_STREAMS_TICK_INTERVAL_S"] = "1"
    return worker


def heartbeat(stamp: Stamp, node: str, interval_s: float) -> NodeHeartbeat:
    """A live agent's heartbeat: it occurred now."""
    payload = NodeHeartbeatPayload(agent_version="it", gpus=8, interval_s=interval_s)
    return stamp.make(NodeHeartbeat, node, payload)


async def emit(settings: KafkaSettings, events: list[Event]) -> None:
    """Produce `events` in their order (500 in flight at a time)."""
    async with Emitter(settings) as emitter:
        for start in range(0, len(events), 500):
            await asyncio.gather(*(emitter.emit(e) for e in events[start : start + 500]))


@contextlib.contextmanager
def heartbeating(
    settings: KafkaSettings, stamp: Stamp, node: str, interval_s: float
) -> Iterator[None]:
    """`node` heartbeats every `interval_s` (through the Emitter, from a thread) while inside."""
    stop = threading.Event()

    async def beating() -> None:
        async with Emitter(settings) as emitter:
            while not stop.is_set():
                await emitter.emit(heartbeat(stamp, node, interval_s))
                await asyncio.sleep(interval_s)

    thread = threading.Thread(target=lambda: asyncio.run(beating()))
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


async def _read_all(
    settings: KafkaSettings,
    topic: str,
    until: Callable[[list[Any]], bool],
    timeout_s: float,
    on_idle: Callable[[], None],
) -> list[Any]:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=settings.bootstrap, auto_offset_reset="earliest"
    )
    await consumer.start()
    records: list[Any] = []
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not until(records):
            batch = await consumer.getmany(timeout_ms=300)
            for messages in batch.values():
                records.extend(messages)
            on_idle()
    finally:
        await consumer.stop()
    return records


def triggers_sent(
    settings: KafkaSettings,
    until: Callable[[list[Any]], bool],
    timeout_s: float,
    on_idle: Callable[[], None] = lambda: None,
) -> list[Any]:
    """Every trigger on the triggers topic, in order per partition, polled until `until`."""

    def read(records: list[Any]) -> list[Any]:
        return [e for r in records for e in decode(r.value)]

    records = asyncio.run(
        _read_all(
            settings,
            topic_name("triggers", settings),
            lambda rs: until(read(rs)),
            timeout_s,
            on_idle,
        )
    )
    return read(records)


def trigger_counts(
    settings: KafkaSettings,
    until: Callable[[Counter[str]], bool],
    timeout_s: float,
    on_idle: Callable[[], None] = lambda: None,
) -> Counter[str]:
    """Trigger ids on the triggers topic (with how often each was sent), polled until `until`."""

    def counts(triggers: list[Any]) -> Counter[str]:
        return Counter(str(t.event_id) for t in triggers)

    return counts(triggers_sent(settings, lambda ts: until(counts(ts)), timeout_s, on_idle))


async def _read_to_end(settings: KafkaSettings, topic: str) -> list[Any]:
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in range(partition_count("jobs"))]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        end = await consumer.end_offsets(partitions)
        records: list[Any] = []
        while any([await consumer.position(tp) < end[tp] for tp in partitions]):
            for messages in (await consumer.getmany(timeout_ms=300)).values():
                records.extend(messages)
        return records
    finally:
        await consumer.stop()


def changelog_history(app_id: str, table: str, key: str, settings: KafkaSettings) -> list[str]:
    """Every record of `key` in a table's changelog: where it is, and the fields that tell its
    states apart, so a lost state shows which records the changelog never got."""
    records = asyncio.run(_read_to_end(settings, f"{app_id}-{table}-changelog"))
    shown = ("state", "attempt", "attempts_started", "last_checkpoint_step", "updated_at")
    return [
        f"p{r.partition}@{r.offset}: "
        + str({k: v for k, v in orjson.loads(r.value).items() if k in shown})
        for r in records
        if r.key == key.encode() and r.value is not None
    ]


def table_contents(app_id: str, table: str, settings: KafkaSettings) -> dict[str, Any]:
    """The latest value per key in a table's changelog (what a restarted worker restores)."""
    records = asyncio.run(_read_to_end(settings, f"{app_id}-{table}-changelog"))
    return {r.key.decode(): orjson.loads(r.value) for r in records if r.value is not None}
