"""Plug the codec into Kafka clients: aiokafka (de)serializers that never raise on bad input.

A deserializer that raises kills the consumer's fetch loop on one bad message; instead bad bytes
come back as a `Decoded` with its error, and the consumer dead-letters them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from schemas.codec import DecodeError, decode, encode, encode_batch
from schemas.envelope import Event


@dataclass(frozen=True)
class Decoded:
    raw: bytes
    events: list[Event] = field(default_factory=list)
    error: DecodeError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def deserialize(raw: bytes | None) -> Decoded:
    """`value_deserializer` for aiokafka consumers."""
    data = raw or b""
    try:
        return Decoded(data, decode(data))
    except DecodeError as exc:
        return Decoded(data, error=exc)


def serialize(value: Event | Sequence[Event]) -> bytes:
    """`value_serializer` for aiokafka producers: one event, or a batch of one key."""
    return encode(value) if isinstance(value, Event) else encode_batch(value)
