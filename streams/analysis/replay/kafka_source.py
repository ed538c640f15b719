"""History read from Kafka: exact offset ranges of catalog topics, such as `jobs:0:1200-1500`.

`TOPIC:PARTITION:START-END` names a catalog topic (the prefix of `CENTRALITY_KAFKA_TOPIC_PREFIX`
is added), and END is exclusive: `jobs:0:0-100` is offsets 0 to 99, and an END equal to the
partition's end offset reads to its last record. The consumer is assigned and seeks; it joins no
group and commits nothing. Messages that do not decode are counted by reason and skipped.

The range's event time runs from its earliest event to its latest (inclusive). Around it:
- warm-up: the same partitions from the first record stamped at or after `since - warmup_s` up
  to each range's START; events in [since - warmup_s, since) are folded into state first;
- "then": the triggers topic (every partition) from the first record stamped at or after
  `since`, up to its end when the replay starts, keeping triggers of the range's event time
  about what was read (their subject, nodes or causes); explain's action results likewise come
  from the actions topic.
Both seek by record timestamp, so they assume a record is not stamped earlier than its event
occurred, which holds for records stamped when produced (the Emitter's and the streams').
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from schemas.codec import DecodeError, decode
from schemas.envelope import Event
from schemas.events import Trigger
from schemas.events.actions import ActionPayload
from schemas.placement import Placement
from schemas.runtime import kafka_clients
from schemas.runtime.batches import SkippingFetcher
from schemas.runtime.placement import read_by
from schemas.runtime.settings import KafkaSettings
from schemas.topics import partition_count, spec, topic_name
from streams.analysis.replay.source import History
from streams.history.query import event_time_key

_RANGE = re.compile(r"^([A-Za-z0-9._-]+):(\d+):(\d+)-(\d+)$")
_NOTHING = datetime(1970, 1, 1, tzinfo=UTC)
Span = tuple[TopicPartition, int, int]  # partition, first offset, end (exclusive)


@dataclass(frozen=True)
class OffsetRange:
    topic: str  # catalog name, without the prefix
    partition: int
    start: int
    end: int  # exclusive

    @classmethod
    def parse(cls, text: str) -> OffsetRange:
        match = _RANGE.match(text)
        if not match:
            raise ValueError(f"{text!r}: expected TOPIC:PARTITION:START-END, e.g. jobs:0:0-500")
        topic, partition, start, end = match.groups()
        try:
            carries_events = spec(topic).carries_events
        except KeyError as exc:
            raise ValueError(str(exc)) from None
        if not carries_events:
            raise ValueError(f"{topic!r} does not carry events")
        if int(end) <= int(start):
            raise ValueError(f"{text!r}: END is exclusive and must exceed START")
        return cls(topic, int(partition), int(start), int(end))

    def __str__(self) -> str:
        return f"{self.topic}:{self.partition}:{self.start}-{self.end}"


class OffsetsUnavailable(ValueError):
    """A range asks for offsets the partition does not hold (not yet written, or expired)."""


@dataclass
class KafkaSource:
    settings: KafkaSettings
    ranges: Sequence[OffsetRange]
    job: str | None = None
    node: str | None = None
    stall_timeout_s: float = 30.0
    _known: dict[str, Event] = field(default_factory=dict, init=False)
    _since: datetime = field(default=_NOTHING, init=False)

    def load(self, warmup_s: float) -> History:
        return asyncio.run(self._load(warmup_s))

    def events_by_id(self, ids: Sequence[str]) -> dict[str, Event]:
        """Among what `load` read (warm-up, range and recorded triggers)."""
        return {i: self._known[i] for i in ids if i in self._known}

    def status_before(
        self, subjects: Sequence[str], before: datetime
    ) -> dict[str, tuple[datetime, dict[str, Any]]]:
        """Nothing: offsets before the warm-up are never read, so nothing is known of them."""
        return {}

    def action_results_for(self, trigger_ids: Sequence[str]) -> list[Event]:
        wanted = set(trigger_ids)
        results = asyncio.run(self._scan_alone("actions", self._since))
        found = {
            str(e.event_id): e
            for e in results
            if isinstance(e.payload, ActionPayload) and str(e.payload.trigger_id) in wanted
        }
        return sorted(found.values(), key=event_time_key)

    async def _load(self, warmup_s: float) -> History:
        undecodable: Counter[str] = Counter()
        spans = [(self._tp(r), r.start, r.end) for r in self.ranges]
        async with _consumer(self.settings) as consumer:
            await _check_available(consumer, self.ranges, spans)
            read = await self._read(consumer, spans, undecodable)
            facts = [e for e in read if not isinstance(e, Trigger)]
            self._known = {str(e.event_id): e for e in read}
            if not facts:
                return History(_NOTHING, _NOTHING, [], [], [], dict(undecodable))
            since = min(e.occurred_at for e in facts)
            until = max(e.occurred_at for e in facts) + timedelta(microseconds=1)
            self._since = since
            warm = await self._warmup(consumer, since, warmup_s, undecodable)
            scanned = await self._scan(consumer, "triggers", since, undecodable)
        subjects = _subjects([*warm, *facts], self.job, self.node)
        warmup = [e for e in warm if e.subject in subjects]
        inputs = [e for e in facts if e.subject in subjects]
        self._known.update({str(e.event_id): e for e in warm})
        ids = {e.event_id for e in [*warmup, *inputs]}
        triggers = {
            str(t.event_id): t
            for t in scanned
            if isinstance(t, Trigger)
            and since <= t.occurred_at < until
            and _about(t, subjects, ids)
        }
        self._known.update(triggers)
        return History(
            since,
            until,
            sorted(warmup, key=event_time_key),
            sorted(inputs, key=event_time_key),
            sorted(triggers.values(), key=event_time_key),
            dict(undecodable),
        )

    def _tp(self, r: OffsetRange) -> TopicPartition:
        return TopicPartition(topic_name(r.topic, self.settings), r.partition)

    async def _warmup(
        self,
        consumer: AIOKafkaConsumer,
        since: datetime,
        warmup_s: float,
        undecodable: Counter[str],
    ) -> list[Event]:
        if warmup_s <= 0:
            return []
        begin = since - timedelta(seconds=warmup_s)
        firsts: dict[TopicPartition, int] = {}
        for r in self.ranges:
            firsts[self._tp(r)] = min(firsts.get(self._tp(r), r.start), r.start)
        found = await consumer.offsets_for_times({tp: _ms(begin) for tp in firsts})
        spans = []
        for tp, first in sorted(firsts.items()):
            at = found.get(tp)
            if at is not None and at.offset < first:
                spans.append((tp, at.offset, first))
        out = await self._read(consumer, spans, undecodable)
        return [e for e in out if not isinstance(e, Trigger) and begin <= e.occurred_at < since]

    async def _scan(
        self,
        consumer: AIOKafkaConsumer,
        topic: str,
        since: datetime,
        undecodable: Counter[str],
    ) -> list[Event]:
        """A whole catalog topic from the first record stamped at or after `since` to its end."""
        name = topic_name(topic, self.settings)
        # The catalog's partition count: it is what `ensure_topics` creates.
        tps = [TopicPartition(name, p) for p in range(partition_count(topic))]
        starts = await consumer.offsets_for_times({tp: _ms(since) for tp in tps})
        ends = await consumer.end_offsets(tps)
        spans = []
        for tp in tps:
            at = starts.get(tp)
            if at is not None and at.offset < ends[tp]:
                spans.append((tp, at.offset, ends[tp]))
        return await self._read(consumer, spans, undecodable)

    async def _scan_alone(self, topic: str, since: datetime) -> list[Event]:
        async with _consumer(self.settings) as consumer:
            return await self._scan(consumer, topic, since, Counter())

    async def _read(
        self, consumer: AIOKafkaConsumer, spans: Sequence[Span], undecodable: Counter[str]
    ) -> list[Event]:
        """Offsets [start, end) of partitions, decoded (batches included), in span order.

        The partitions are fetched together; a partition named twice is read in a second round.
        """
        out: list[Event] = []
        pending = list(spans)
        while pending:
            round_: dict[TopicPartition, tuple[int, int]] = {}
            later = []
            for tp, start, end in pending:
                if tp in round_:
                    later.append((tp, start, end))
                else:
                    round_[tp] = (start, end)
            got = await self._read_round(consumer, round_, undecodable)
            for tp in round_:
                out += got[tp]
            pending = later
        return out

    async def _read_round(
        self,
        consumer: AIOKafkaConsumer,
        spans: dict[TopicPartition, tuple[int, int]],
        undecodable: Counter[str],
    ) -> dict[TopicPartition, list[Event]]:
        consumer.assign(list(spans))
        for tp, (start, _) in spans.items():
            consumer.seek(tp, start)
        out: dict[TopicPartition, list[Event]] = {tp: [] for tp in spans}
        left = {tp for tp, (start, end) in spans.items() if start < end}
        deadline = time.monotonic() + self.stall_timeout_s
        fetcher = SkippingFetcher(consumer)
        placement = read_by(consumer, self.settings)
        while left:
            batches, skipped, _ = await fetcher.getmany(*left, timeout_ms=200)
            for skip in skipped:  # a batch this client cannot read: counted, read past
                undecodable[skip.reason] += 1
            for tp, records in batches.items():
                end = spans[tp][1]
                for record in records:
                    if record.offset < end:
                        out[tp] += _decoded(record, placement, undecodable)
            for tp in list(left):
                if await consumer.position(tp) >= spans[tp][1]:
                    left.discard(tp)
                    consumer.pause(tp)
            if batches or skipped:
                deadline = time.monotonic() + self.stall_timeout_s
            elif time.monotonic() > deadline:
                raise TimeoutError(f"no records from {sorted(left)} for {self.stall_timeout_s} s")
        return out


def _decoded(
    record: ConsumerRecord[bytes, bytes], placement: Placement, undecodable: Counter[str]
) -> list[Event]:
    """What the live worker folds of a record: nothing of one it dead-letters, misplaced ones
    included, counted by reason."""
    if record.value is None:
        undecodable["tombstone"] += 1
        return []
    try:
        events = decode(record.value)
        problem = placement.check(
            events, topic=record.topic, key=record.key, partition=record.partition
        )
        if problem is not None:
            raise problem
        return events
    except DecodeError as exc:
        undecodable[exc.reason] += 1
        return []


def _subjects(facts: Iterable[Event], job: str | None, node: str | None) -> set[str]:
    """Whose events a replay keeps: one job; a node and the jobs that ran on it; or all."""
    facts = list(facts)
    if job is not None:
        return {job}
    if node is not None:
        ran = {e.subject for e in facts if node in (getattr(e.payload, "nodes", None) or ())}
        return {node, *ran}
    return {e.subject for e in facts}


def _about(trigger: Trigger, subjects: set[str], ids: set[uuid.UUID]) -> bool:
    nodes = getattr(trigger.payload, "nodes", ())
    return (
        trigger.subject in subjects
        or not subjects.isdisjoint(nodes)
        or not ids.isdisjoint(trigger.payload.caused_by)
    )


async def _check_available(
    consumer: AIOKafkaConsumer, ranges: Sequence[OffsetRange], spans: Sequence[Span]
) -> None:
    tps = [tp for tp, _, _ in spans]
    firsts = await consumer.beginning_offsets(tps)
    ends = await consumer.end_offsets(tps)
    for r, (tp, start, end) in zip(ranges, spans, strict=True):
        if start < firsts[tp] or end > ends[tp]:
            raise OffsetsUnavailable(
                f"{r}: {tp.topic} partition {tp.partition} holds offsets "
                f"{firsts[tp]}-{ends[tp]} (END exclusive)"
            )


def _ms(at: datetime) -> int:
    return max(0, int(at.timestamp() * 1000))


@asynccontextmanager
async def _consumer(settings: KafkaSettings) -> AsyncIterator[AIOKafkaConsumer]:
    consumer = kafka_clients.consumer(
        settings,
        client_id=f"{settings.client_id}-replay",
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        yield consumer
    finally:
        await consumer.stop()
