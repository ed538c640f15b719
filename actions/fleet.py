"""The fleet a circuit breaker measures against: configured, or observed from heartbeats; and
its node groups, from the streams app's `status` topic (what `centrality nodes` shows).

Without `CENTRALITY_ACTIONS_FLEET_SIZE` for a cluster, its fleet is the nodes that sent a
`NodeHeartbeat` within `fleet_window_s`. The worker watches the `nodes` topic for that with a
consumer of its own (no group: every worker sees every node), seeded on start from the last
window by record time, so a restarted worker knows the fleet before it acts on any trigger. It
runs beside trigger handling and never blocks it: a watcher that fails is logged and retried.
The window ends at the cluster's frontier (`schemas.runtime.frontier`), not the clock: heartbeats
arriving late (a simulated day sent in a minute) are counted as of their own time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime, timedelta

import structlog
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from schemas.codec import DecodeError, decode
from schemas.envelope import utcnow
from schemas.events import NodeHeartbeat
from schemas.groups import Match
from schemas.runtime import kafka_clients
from schemas.runtime.fleet import Fleet
from schemas.runtime.frontier import Frontier, reached
from schemas.runtime.outages import OUTAGES
from schemas.runtime.settings import KafkaSettings
from schemas.topics import partition_count, topic_name

log = structlog.get_logger("actions.fleet")

_HEARTBEAT = b'"NodeHeartbeat"'  # most records on `nodes` are something else: skip them undecoded


class ObservedFleet:
    """Last heartbeat per node and cluster; sizes counted over a window ending at the
    cluster's frontier (the clock, for a fleet reporting as it goes)."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self._seen: dict[str, dict[str, datetime]] = {}
        self._reached: dict[str, Frontier] = {}

    def observe(self, heartbeat: NodeHeartbeat, written_s: float | None = None) -> None:
        """A heartbeat, from a record written at `written_s` (epoch seconds; None: unknown)."""
        nodes = self._seen.setdefault(heartbeat.cluster, {})
        last = nodes.get(heartbeat.subject)
        if last is None or heartbeat.occurred_at > last:
            nodes[heartbeat.subject] = heartbeat.occurred_at
        at_s = heartbeat.occurred_at.timestamp()
        moved = reached(self._reached.get(heartbeat.cluster), at_s, written_s)
        if moved is not None:
            self._reached[heartbeat.cluster] = moved

    def size(self, cluster: str, now: datetime) -> int:
        frontier = self._reached.get(cluster)
        end = now if frontier is None else datetime.fromtimestamp(frontier.at(now.timestamp()), UTC)
        since = end - timedelta(seconds=self.window_s)
        return sum(1 for at in self._seen.get(cluster, {}).values() if at >= since)

    @property
    def clusters(self) -> list[str]:
        return sorted(self._seen)


class FleetSizes:
    """What a breaker asks: the configured size of a cluster, else the observed one; the nodes
    of a node group (`known`: the status topic, read by the worker when groups are set)."""

    def __init__(
        self, configured: Mapping[str, int], observed: ObservedFleet, known: Fleet | None = None
    ) -> None:
        self.configured = configured
        self.observed = observed
        self.known = known or Fleet()

    def group(self, cluster: str, match: Match) -> set[str]:
        """The nodes of `cluster` the streams app knows that `match` selects."""
        return {
            status.subject
            for status in self.known.nodes.values()
            if status.cluster == cluster and match.selects(status.group_facts)
        }

    def size(self, cluster: str, now: datetime) -> tuple[int, str]:
        """The size and where it comes from, in words for a refusal."""
        if configured := self.configured.get(cluster):
            return configured, "configured"
        window = f"{self.observed.window_s:g}s"
        return self.observed.size(cluster, now), f"nodes with a heartbeat within {window}"


class FleetWatcher:
    """Feeds an `ObservedFleet` from the `nodes` topic."""

    def __init__(
        self,
        kafka: KafkaSettings,
        fleet: ObservedFleet,
        *,
        seed_timeout_s: float = 30.0,
        retry_s: float = 5.0,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.kafka = kafka
        self.fleet = fleet
        self.seed_timeout_s = seed_timeout_s
        self.retry_s = retry_s
        self.clock = clock
        self.topic = topic_name("nodes", kafka)
        self.partitions = [TopicPartition(self.topic, p) for p in range(partition_count("nodes"))]

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[ObservedFleet]:
        """Seeded (or given up on after `seed_timeout_s`) on entry, then watched until exit."""
        seeded = asyncio.Event()
        task = asyncio.create_task(self._watch(seeded))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(seeded.wait(), self.seed_timeout_s)
        if not seeded.is_set():
            log.warning("fleet_not_seeded", timeout_s=self.seed_timeout_s)
        try:
            yield self.fleet
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _watch(self, seeded: asyncio.Event) -> None:
        while True:
            try:
                await self._consume(seeded)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # isolated from triggers: log, wait, read again
                if not OUTAGES.explains("kafka"):
                    log.error("fleet_watch_failed", error=f"{type(exc).__name__}: {exc}")
                await asyncio.sleep(self.retry_s)

    async def _consume(self, seeded: asyncio.Event) -> None:
        consumer = kafka_clients.consumer(
            self.kafka,
            client_id=f"{self.kafka.client_id}-fleet",
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="latest",
        )
        await consumer.start()
        try:
            consumer.assign(self.partitions)
            since = self.clock() - timedelta(seconds=self.fleet.window_s)
            starts = await consumer.offsets_for_times(
                {tp: max(0, int(since.timestamp() * 1000)) for tp in self.partitions}
            )
            ends = await consumer.end_offsets(self.partitions)
            for tp in self.partitions:
                found = starts.get(tp)
                consumer.seek(tp, found.offset if found is not None else ends[tp])
            while True:
                fetched = await consumer.getmany(timeout_ms=500, max_records=5000)
                for records in fetched.values():
                    for record in records:
                        self._observe(record)
                if not seeded.is_set() and all(
                    await asyncio.gather(*(self._reached(consumer, tp, ends) for tp in ends))
                ):
                    log.info("fleet_seeded", clusters=self.fleet.clusters)
                    seeded.set()
        finally:
            await kafka_clients.stop(consumer)

    @staticmethod
    async def _reached(
        consumer: AIOKafkaConsumer, tp: TopicPartition, ends: Mapping[TopicPartition, int]
    ) -> bool:
        position: int = await consumer.position(tp)
        return position >= ends[tp]

    def _observe(self, record: ConsumerRecord[bytes, bytes]) -> None:
        raw = record.value or b""
        if _HEARTBEAT not in raw:
            return
        try:
            events = decode(raw)
        except DecodeError:
            return  # the streams app dead-letters it; the fleet only counts what it can read
        for event in events:
            if isinstance(event, NodeHeartbeat):
                self.fleet.observe(event, record.timestamp / 1000)
