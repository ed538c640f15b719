"""Kafka records → ClickHouse rows: `events` for the contract, `dead_letters` for the rest."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from schemas.codec import DecodeError, decode
from schemas.deadletter import DeadLetter
from schemas.envelope import Event, utcnow
from schemas.placement import Placement

EVENT_COLUMNS = (
    "event_id",
    "type",
    "schema_version",
    "source",
    "cluster",
    "subject",
    "occurred_at",
    "observed_at",
    "topic",
    "partition",
    "offset",
    "payload",
)
DEAD_LETTER_COLUMNS = (
    "consumer",
    "reason",
    "detail",
    "topic",
    "partition",
    "offset",
    "key",
    "raw",
    "dead_lettered_at",
)
SINK_CONSUMER = "history-sink"
# Every event on the wire carries this key (`WIRE_REQUIRED`), and inside a JSON string a quote is
# escaped, so the count of it is the number of events a message holds (more only if a payload
# has a key of that name). The sink sizes batches with it before decoding, in another process.
_EVENT_KEY = b'"event_id":'


class RecordLike(Protocol):
    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...


class Record(NamedTuple):
    """What the sink keeps of a Kafka record: cheap to hand to an insert process."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def estimated_rows(record: RecordLike) -> int:
    return max(1, (record.value or b"").count(_EVENT_KEY))


@dataclass
class Rows:
    events: list[list[Any]] = field(default_factory=list)
    dead_letters: list[list[Any]] = field(default_factory=list)
    rejected: list[DeadLetter] = field(default_factory=list)
    """The dead letters the sink made itself (undecodable records), to be counted and logged."""

    def __len__(self) -> int:
        return len(self.events) + len(self.dead_letters)


def event_row(event: Event, topic: str, partition: int, offset: int) -> list[Any]:
    return [
        event.event_id,
        event.type,
        event.schema_version,
        event.source,
        event.cluster,
        event.subject,
        event.occurred_at,
        event.observed_at,
        topic,
        partition,
        offset,
        event.payload.__pydantic_serializer__.to_json(event.payload).decode(),
    ]


def dead_letter_row(letter: DeadLetter) -> list[Any]:
    return [
        letter.consumer,
        letter.reason,
        letter.detail,
        letter.topic,
        letter.partition,
        letter.offset,
        letter.key,
        letter.raw,
        letter.dead_lettered_at,
    ]


def add_record(rows: Rows, record: RecordLike, deadletter_topic: str, placement: Placement) -> None:
    """Append the rows of one record; what the sink cannot decode, or finds misplaced as the
    streams worker would (it is never folded), becomes a dead letter itself."""
    raw = record.value or b""
    try:
        if record.topic == deadletter_topic:
            rows.dead_letters.append(dead_letter_row(DeadLetter.from_bytes(raw)))
            return
        events = decode(raw)
        problem = placement.check(
            events, topic=record.topic, key=record.key, partition=record.partition
        )
        if problem is not None:
            raise problem
    except (DecodeError, ValueError) as exc:
        letter = DeadLetter(
            reason=getattr(exc, "reason", "invalid-dead-letter"),
            detail=str(exc)[:1000],
            consumer=SINK_CONSUMER,
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            key=record.key,
            raw=raw,
            dead_lettered_at=utcnow(),
        )
        rows.rejected.append(letter)
        rows.dead_letters.append(dead_letter_row(letter))
        return
    rows.events.extend(event_row(e, record.topic, record.partition, record.offset) for e in events)
