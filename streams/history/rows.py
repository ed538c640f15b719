"""Kafka records → ClickHouse rows: `events` for the contract, `dead_letters` for the rest."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiokafka import ConsumerRecord

from schemas.codec import DecodeError, decode
from schemas.deadletter import DeadLetter, count_dead_letter
from schemas.envelope import Event, utcnow

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


@dataclass
class Rows:
    events: list[list[Any]] = field(default_factory=list)
    dead_letters: list[list[Any]] = field(default_factory=list)

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


def add_record(rows: Rows, record: ConsumerRecord[bytes, bytes], deadletter_topic: str) -> None:
    """Append the rows of one record; what the sink cannot decode becomes a dead letter itself."""
    raw = record.value or b""
    try:
        if record.topic == deadletter_topic:
            rows.dead_letters.append(dead_letter_row(DeadLetter.from_bytes(raw)))
            return
        events = decode(raw)
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
        count_dead_letter(letter)
        rows.dead_letters.append(dead_letter_row(letter))
        return
    rows.events.extend(event_row(e, record.topic, record.partition, record.offset) for e in events)
