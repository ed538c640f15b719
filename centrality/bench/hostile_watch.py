"""What the hostile bench reads from the outside while the workers run: their consumer groups'
committed offsets, the story's trigger and action result, their memory, and afterwards the
dead letters and any action taken on an unsigned trigger. Only public behaviour: processes,
consumer groups, topics."""

from __future__ import annotations

import importlib
import os
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from schemas.codec import DecodeError, decode
from schemas.events import ActionStarted, ActionSucceeded, RestartJob
from schemas.runtime import kafka_clients
from schemas.runtime.settings import KafkaSettings
from schemas.topics import partition_count, topic_name
from streams.history.client import connect
from streams.history.settings import ClickHouseSettings

Offsets = dict[TopicPartition, int]
_TICK_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def partitions(kafka: KafkaSettings, topics: Iterable[str]) -> list[TopicPartition]:
    return [
        TopicPartition(topic_name(t, kafka), p) for t in topics for p in range(partition_count(t))
    ]


async def end_offsets(kafka: KafkaSettings, tps: list[TopicPartition]) -> Offsets:
    consumer = kafka_clients.consumer(kafka)
    await consumer.start()
    try:
        return dict(await consumer.end_offsets(tps))
    finally:
        await consumer.stop()


@dataclass
class Group:
    """A worker's consumer group and the offsets that mean 'the storm is consumed'."""

    worker: str
    group_id: str
    targets: Offsets
    pid: int | None = None
    consumed_at: float | None = None
    cpu_at_consumed_s: float | None = None
    """The worker's CPU (its process group's) when the group was first seen consumed."""
    moved_at: float = field(default_factory=time.monotonic)
    position: int = -1

    def update(self, committed: Offsets, now: float) -> None:
        position = sum(max(0, committed.get(tp, 0)) for tp in self.targets)
        if position != self.position:
            self.position, self.moved_at = position, now
        done = all(max(0, committed.get(tp, 0)) >= end for tp, end in self.targets.items())
        if done and self.consumed_at is None:
            self.consumed_at = now
            if self.pid is not None:
                self.cpu_at_consumed_s = cpu_s({self.worker: self.pid})[self.worker]

    def stalled(self, now: float, stall_s: float) -> bool:
        """Lagging, and its committed offsets have not moved for `stall_s`."""
        return self.consumed_at is None and now - self.moved_at > stall_s

    @property
    def lag(self) -> int:
        return max(0, sum(self.targets.values()) - self.position)


class Groups:
    def __init__(self, kafka: KafkaSettings, groups: list[Group]) -> None:
        self.kafka = kafka
        self.groups = groups
        self._admin: AIOKafkaAdminClient | None = None

    async def poll(self) -> None:
        if self._admin is None:
            self._admin = kafka_clients.admin(self.kafka)
            await self._admin.start()
        now = time.monotonic()
        for group in self.groups:
            try:
                found = await self._admin.list_consumer_group_offsets(
                    group.group_id, partitions=list(group.targets)
                )
            except KafkaError:  # e.g. no coordinator yet on a fresh broker: ask again next time
                continue
            group.update({tp: meta.offset for tp, meta in found.items()}, now)

    async def close(self) -> None:
        if self._admin is not None:
            await self._admin.close()


async def reader_at(kafka: KafkaSettings, start: Offsets) -> AIOKafkaConsumer:
    """A started consumer of these partitions from these offsets, committing nothing."""
    consumer = kafka_clients.consumer(kafka, enable_auto_commit=False)
    await consumer.start()
    consumer.assign(list(start))
    for tp, offset in start.items():
        consumer.seek(tp, offset)
    return consumer


class StoryWatch:
    """Follows the story's job on the triggers and actions topics from given offsets: its
    RestartJob, then the ActionSucceeded of `restart_job` for that trigger."""

    def __init__(self, kafka: KafkaSettings, job: str, start: Offsets) -> None:
        self.kafka = kafka
        self.key = job.encode()
        self.start = start
        self.trigger_id: uuid.UUID | None = None
        self.restart_at: float | None = None
        self.decided_at: float | None = None
        self._succeeded: dict[uuid.UUID, float] = {}
        self._consumer: AIOKafkaConsumer | None = None

    async def poll(self) -> None:
        if self._consumer is None:
            self._consumer = await reader_at(self.kafka, self.start)
        fetched = await self._consumer.getmany(timeout_ms=100)
        now = time.monotonic()
        for records in fetched.values():
            for record in records:
                if record.key == self.key:
                    self._see(record, now)

    def _see(self, record: ConsumerRecord[bytes, bytes], now: float) -> None:
        try:
            events = decode(record.value or b"")
        except DecodeError:
            return
        for event in events:
            if isinstance(event, RestartJob) and self.restart_at is None:
                self.trigger_id, self.restart_at = event.event_id, now
            if isinstance(event, ActionSucceeded) and event.payload.action == "restart_job":
                self._succeeded.setdefault(event.payload.trigger_id, now)
        # The two topics are fetched independently: the result may be read before its trigger.
        if self.decided_at is None and self.trigger_id in self._succeeded:
            assert self.restart_at is not None
            self.decided_at = max(self.restart_at, self._succeeded[self.trigger_id])

    async def close(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()


async def scan(
    kafka: KafkaSettings, topic: str, start: Offsets | None = None
) -> AsyncIterator[ConsumerRecord[bytes, bytes]]:
    """Every record of a catalog topic from `start` (default: the beginning) to its end now."""
    tps = partitions(kafka, [topic])
    consumer = kafka_clients.consumer(kafka, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        for tp in tps:
            consumer.seek(tp, (start or {}).get(tp, 0))
        remaining = {tp for tp in tps if (start or {}).get(tp, 0) < ends[tp]}
        while remaining:
            for tp, records in (await consumer.getmany(*remaining, timeout_ms=1000)).items():
                for record in records:
                    if record.offset < ends[tp]:
                        yield record
                if records and records[-1].offset + 1 >= ends[tp]:
                    remaining.discard(tp)
    finally:
        await consumer.stop()


async def dead_letters(kafka: KafkaSettings) -> tuple[Counter[str], Counter[tuple[str, str]]]:
    """Dead letters by reason, and by (consumer, reason). Only the two fields are read: a
    million letters each carrying its raw bytes in base64 would take long to validate."""
    by_reason: Counter[str] = Counter()
    by_consumer: Counter[tuple[str, str]] = Counter()
    async for record in scan(kafka, "deadletter"):
        try:
            letter = orjson.loads(record.value or b"")
            reason, consumer = str(letter["reason"]), str(letter["consumer"])
        except (orjson.JSONDecodeError, KeyError, TypeError):
            reason, consumer = "unreadable-letter", "?"
        by_reason[reason] += 1
        by_consumer[(consumer, reason)] += 1
    return by_reason, by_consumer


def sink_dead_letters(clickhouse: ClickHouseSettings, others: Iterable[str]) -> Counter[str]:
    """What the sink rejected itself, by reason: it parks those in ClickHouse's `dead_letters`
    (beside the copies of the topic's letters, which name the consumer that made them)."""
    with connect(clickhouse) as client:
        rows = client.query(
            "SELECT reason, count() FROM dead_letters FINAL "
            "WHERE consumer NOT IN {others:Array(String)} GROUP BY reason",
            parameters={"others": list(others)},
        ).result_rows
    return Counter({str(reason): int(n) for reason, n in rows})


async def acted_on(kafka: KafkaSettings, ids: set[uuid.UUID], start: Offsets, prefix: bytes) -> int:
    """How many of these trigger ids have an action result (started or succeeded)."""
    obeyed: set[uuid.UUID] = set()
    async for record in scan(kafka, "actions", start):
        if not (record.key or b"").startswith(prefix):
            continue
        try:
            events = decode(record.value or b"")
        except DecodeError:
            continue
        for event in events:
            acted = isinstance(event, ActionStarted | ActionSucceeded)
            if acted and event.payload.trigger_id in ids:
                obeyed.add(event.payload.trigger_id)
    return len(obeyed)


def process_groups() -> dict[int, list[int]]:
    """Process group id → its processes (workers lead their own group)."""
    out: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        out.setdefault(int(fields[2]), []).append(int(entry.name))
    return out


def cpu_s(workers: dict[str, int]) -> dict[str, float]:
    """CPU seconds (user and system) used so far by each worker's process group."""
    groups = process_groups()
    out: dict[str, float] = {}
    for name, pid in workers.items():
        ticks = 0
        for member in groups.get(pid, [pid]):
            try:
                stat = Path(f"/proc/{member}/stat").read_text()
            except OSError:  # gone between the listing and the read
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        out[name] = ticks / _TICK_S
    return out


class PeakRss:
    """Peak resident memory per worker: the kernel's high-water mark (VmHWM) of each process in
    the worker's process group (the sink's insert processes too), summed. Off Linux, psutil's
    RSS sampled, if installed. Every `every_s`, each worker's highest resident memory (VmRSS,
    summed alike) of the samples since the last point: the curve a soak reads growth from. The
    highest, not the last: a worker that hands freed memory back (`malloc_trim`) saws up and
    down by a few MB, and a point that fell on a trough read as growth the crests never had."""

    def __init__(self, every_s: float = 60.0) -> None:
        self._peaks: dict[str, dict[int, int]] = {}
        self._curve: dict[str, list[float]] = {}
        self._crest_kb: dict[str, int] = {}
        self._every_s = every_s
        self._next_s = time.monotonic()
        self._psutil: Any = None
        if not Path("/proc/self/status").exists():
            try:
                self._psutil = importlib.import_module("psutil")
            except ImportError:
                self._psutil = None

    def sample(self, workers: dict[str, int]) -> None:
        groups = process_groups() if self._psutil is None else {}
        now_kb: dict[str, int] = {}
        for name, pid in workers.items():
            peaks = self._peaks.setdefault(name, {})
            for member in groups.get(pid, [pid]) if self._psutil is None else [pid]:
                kb = self._kb(member, "VmHWM") if self._psutil is None else self._psutil_kb(pid)
                if kb is not None:
                    peaks[member] = max(peaks.get(member, 0), kb)
                rss = self._kb(member, "VmRSS") if self._psutil is None else kb
                now_kb[name] = now_kb.get(name, 0) + (rss or 0)
        for name, kb in now_kb.items():
            self._crest_kb[name] = max(self._crest_kb.get(name, 0), kb)
        if time.monotonic() >= self._next_s:
            self._next_s += self._every_s
            for name, kb in self._crest_kb.items():
                self._curve.setdefault(name, []).append(round(kb / 1024, 1))
            self._crest_kb = {}

    def curve_mb(self) -> dict[str, list[float]]:
        """Per worker, its resident memory each `every_s` since the first sample."""
        return {name: list(points) for name, points in self._curve.items()}

    def peak_mb(self) -> dict[str, float | None]:
        return {
            name: round(sum(peaks.values()) / 1024, 1) if peaks else None
            for name, peaks in self._peaks.items()
        }

    @staticmethod
    def _kb(pid: int, field: str) -> int | None:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith(f"{field}:"):
                    return int(line.split()[1])
        except OSError:
            return None
        return None

    def _psutil_kb(self, pid: int) -> int | None:
        try:
            proc = self._psutil.Process(pid)
            procs = [proc, *proc.children(recursive=True)]
            return sum(int(p.memory_info().rss) for p in procs) // 1024
        except Exception:  # gone between the listing and the read
            return None


def growth(points: list[float], after: int = 10) -> float | None:
    """How much a curve grew from its point `after` (the first ten minutes of a soak warm it
    up: tables fill, caches load) to its highest since, as a share; None for a curve that
    ends by then."""
    if len(points) <= after or points[after] <= 0:
        return None
    return round(max(points[after:]) / points[after] - 1, 3)
