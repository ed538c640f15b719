"""What `centrality bench scale` measures from the outside while the workers run: when each
fault was handed to the Emitter, when its decision and action result reached Kafka, the
workers' consumer lag, and their CPU time. Only public behaviour: processes, groups, topics."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError

from centrality.bench.hostile_watch import Offsets, partitions, reader_at
from collectors.sink import EventSink
from schemas.codec import DecodeError, decode
from schemas.envelope import Event
from schemas.events import (
    ActionSucceeded,
    GpuXidObserved,
    JobExited,
    NodeStatusChanged,
    QuarantineNodes,
    RestartJob,
)
from schemas.events.jobs import JobState
from schemas.runtime import kafka_clients
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name


class TimedSink:
    """The Emitter, noting the wall time each fault the rules act on was handed to it: a
    node's first fatal XID, a job's first failed exit."""

    def __init__(self, inner: EventSink) -> None:
        self.inner = inner
        self.xids: dict[str, float] = {}
        self.crashes: dict[str, float] = {}

    async def emit(self, event: Event) -> None:
        await self.emit_batch((event,))

    async def emit_batch(self, events: Sequence[Event]) -> None:
        now = time.time()
        for e in events:
            if isinstance(e, GpuXidObserved):
                self.xids.setdefault(e.subject, now)
            elif isinstance(e, JobExited) and e.payload.state == JobState.FAILED:
                self.crashes.setdefault(e.subject, now)
        await self.inner.emit_batch(events)


@dataclass
class Decisions:
    """Record timestamps (the producers' clocks, this machine's) read from the topics: when each
    fault reached Kafka (a node's first fatal XID, a job's first failed exit), each node's first
    quarantine, each job's restarts and each restart's result. Latencies run from the fault's
    record to the decision's: the pipeline's own, not the time the simulator took to send a tick
    of ten thousand nodes before the fault (reported apart, as `handover`)."""

    xid_at: dict[str, float] = field(default_factory=dict)
    crash_at: dict[str, float] = field(default_factory=dict)
    quarantined: dict[str, float] = field(default_factory=dict)
    restarts: dict[str, list[tuple[uuid.UUID, float]]] = field(default_factory=dict)
    restarted: dict[uuid.UUID, float] = field(default_factory=dict)
    shown: dict[str, float] = field(default_factory=dict)  # first status that is not in service

    def see(self, record: ConsumerRecord[bytes, bytes]) -> None:
        try:
            events = decode(record.value or b"")
        except DecodeError:
            return
        at = record.timestamp / 1000
        for e in events:
            if isinstance(e, GpuXidObserved):
                self.xid_at.setdefault(e.subject, at)
            elif isinstance(e, JobExited) and e.payload.state == JobState.FAILED:
                self.crash_at.setdefault(e.subject, at)
            elif isinstance(e, QuarantineNodes):
                for node in e.payload.nodes:
                    self.quarantined.setdefault(node, at)
            elif isinstance(e, RestartJob):
                self.restarts.setdefault(e.subject, []).append((e.event_id, at))
            elif isinstance(e, ActionSucceeded) and e.payload.action == "restart_job":
                self.restarted.setdefault(e.payload.trigger_id, at)
            elif isinstance(e, NodeStatusChanged) and e.payload.state != "in_service":
                self.shown.setdefault(e.subject, at)

    def xid_latencies_s(self, xids: Iterable[str]) -> list[float | None]:
        """Per node with a fatal XID: seconds to its QuarantineNodes; None if none came."""
        out: list[float | None] = []
        for node in xids:
            at, decided = self.xid_at.get(node), self.quarantined.get(node)
            out.append(None if at is None or decided is None else decided - at)
        return out

    def status_lags_s(self, xids: Iterable[str]) -> list[float | None]:
        """Per node with a fatal XID: seconds until what people read (`centrality nodes`) said
        it is out of service; None if it never did."""
        return [
            None
            if node not in self.xid_at or node not in self.shown
            else self.shown[node] - self.xid_at[node]
            for node in xids
        ]

    def restart_latencies_s(self, crashes: Iterable[str]) -> list[float | None]:
        """Per failed job: seconds to the ActionSucceeded of the first restart decided after
        it failed; None if none came."""
        return [self._restart_s(job, done=True) for job in crashes]

    def restart_decided_s(self, crashes: Iterable[str]) -> list[float | None]:
        """Per failed job: seconds to the first RestartJob decided after it failed (the streams
        worker's part of `restart_latencies_s`); None if none came."""
        return [self._restart_s(job, done=False) for job in crashes]

    def _restart_s(self, job: str, *, done: bool) -> float | None:
        at = self.crash_at.get(job)
        if at is None:
            return None
        after = [(tid, t) for tid, t in self.restarts.get(job, []) if t >= at]
        if done:
            after = [(tid, self.restarted[tid]) for tid, _ in after if tid in self.restarted]
        return min(t for _, t in after) - at if after else None

    def handover_s(self, sink: TimedSink) -> list[float]:
        """Per fault: seconds from the simulator handing it to the Emitter to its record."""
        pairs = [(sink.xids, self.xid_at), (sink.crashes, self.crash_at)]
        return [seen[k] - at for handed, seen in pairs for k, at in handed.items() if k in seen]


class DecisionWatch:
    """Follows the fault and decision topics from given offsets into `Decisions`. Of the fault
    topics (`nodes`, `jobs`: heartbeats and job events too) only the records of the faulty
    subjects the sink has seen are decoded."""

    FAULTS = ("nodes", "jobs")
    DECISIONS = ("triggers", "actions", "status")

    def __init__(self, kafka: KafkaSettings, start: Offsets, sink: TimedSink) -> None:
        self.kafka = kafka
        self.start = start
        self.sink = sink
        self.decisions = Decisions()
        self._faults = {topic_name(t, kafka) for t in self.FAULTS}
        self._consumer: AIOKafkaConsumer | None = None

    async def poll(self) -> None:
        if self._consumer is None:
            self._consumer = await reader_at(self.kafka, self.start)
        for tp, records in (await self._consumer.getmany(timeout_ms=100)).items():
            faults = tp.topic in self._faults
            for record in records:
                if not faults or self._faulty((record.key or b"").decode(errors="replace")):
                    self.decisions.see(record)

    def _faulty(self, subject: str) -> bool:
        return subject in self.sink.xids or subject in self.sink.crashes

    async def close(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()


@dataclass
class WorkerLag:
    """A worker's consumer lag over its inputs, sampled: now and the most seen."""

    worker: str
    group_id: str
    inputs: list[TopicPartition]
    # Faust commits up to, not past, the last record it processed: one record per partition
    # it has read stays "lagging" however idle it is.
    held_back: int = 0
    now: int | None = None
    max: int = 0

    def update(self, committed: Offsets, ends: Offsets) -> None:
        lag = 0
        for tp in self.inputs:
            done = max(0, committed.get(tp, 0))
            behind = max(0, ends.get(tp, 0) - done)
            lag += max(0, behind - self.held_back) if done else behind
        self.now, self.max = lag, max(self.max, lag)


class LagSampler:
    def __init__(self, kafka: KafkaSettings, lags: list[WorkerLag]) -> None:
        self.kafka = kafka
        self.lags = lags
        self._admin = kafka_clients.admin(kafka)
        self._consumer = kafka_clients.consumer(kafka, enable_auto_commit=False)
        self._started = False

    async def sample(self) -> None:
        if not self._started:
            await self._admin.start()
            await self._consumer.start()
            self._started = True
        tps = sorted({tp for lag in self.lags for tp in lag.inputs})
        ends = dict(await self._consumer.end_offsets(tps))
        for lag in self.lags:
            try:
                found = await self._admin.list_consumer_group_offsets(
                    lag.group_id, partitions=lag.inputs
                )
            except KafkaError:  # no coordinator yet: ask again next time
                continue
            lag.update({tp: meta.offset for tp, meta in found.items()}, ends)

    @property
    def drained(self) -> bool:
        return all(lag.now == 0 for lag in self.lags)

    async def close(self) -> None:
        if self._started:
            await self._consumer.stop()
            await self._admin.close()


def worker_lags(
    kafka: KafkaSettings, groups: dict[str, str], inputs: dict[str, tuple[str, ...]]
) -> list[WorkerLag]:
    return [
        WorkerLag(w, groups[w], partitions(kafka, topics), held_back=1 if w == "streams" else 0)
        for w, topics in inputs.items()
    ]
