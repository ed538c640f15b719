"""Coalesces events of high-volume families into one message per key (docs/architecture.md:
Faust's cost is per Kafka message, so batching is what lets the streams keep up)."""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas.codec import encode_checked
from schemas.envelope import Event


@dataclass
class PendingBatch:
    topic: str
    key: bytes
    encoded: list[bytes] = field(default_factory=list)
    size_bytes: int = 2

    def add(self, event: Event) -> None:
        """Raises MessageTooLarge, the batch unchanged, for an event no message can carry."""
        self._add_encoded(encode_checked(event))

    def _add_encoded(self, body: bytes) -> None:
        self.encoded.append(body)
        self.size_bytes += len(body) + 1

    def value(self) -> bytes:
        return b"[" + b",".join(self.encoded) + b"]"

    def split(self, max_bytes: int) -> list[PendingBatch]:
        """Parts in order whose values stay within `max_bytes` each (a batch put back after a
        failed send holds what was added meanwhile too, so it may have grown past the bound)."""
        parts = [PendingBatch(self.topic, self.key)]
        for body in self.encoded:
            if parts[-1].encoded and parts[-1].size_bytes + len(body) + 1 > max_bytes:
                parts.append(PendingBatch(self.topic, self.key))
            parts[-1]._add_encoded(body)
        return parts

    @classmethod
    def joined(cls, parts: list[PendingBatch]) -> PendingBatch:
        whole = cls(parts[0].topic, parts[0].key)
        for part in parts:
            for body in part.encoded:
                whole._add_encoded(body)
        return whole


class Batcher:
    """Open batches per (topic, key); the Emitter decides when to close them."""

    def __init__(self, max_events: int, max_bytes: int) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._open: dict[tuple[str, bytes], PendingBatch] = {}

    def add(self, topic: str, event: Event) -> PendingBatch | None:
        """Add `event`; returns a batch that became full and must be sent now."""
        key = (topic, event.key)
        batch = self._open.setdefault(key, PendingBatch(topic, event.key))
        batch.add(event)
        if len(batch.encoded) >= self.max_events or batch.size_bytes >= self.max_bytes:
            return self._open.pop(key)
        return None

    def pop(self) -> PendingBatch | None:
        """The oldest open batch, taken out; None when there is none."""
        if not self._open:
            return None
        key = next(iter(self._open))
        return self._open.pop(key)

    def restore(self, batch: PendingBatch) -> None:
        """Put back a batch whose send did not complete, ahead of anything added since."""
        key = (batch.topic, batch.key)
        newer = self._open.pop(key, None)
        if newer is not None:
            batch.encoded += newer.encoded
            batch.size_bytes += newer.size_bytes - 2
        self._open = {key: batch, **self._open}

    def __len__(self) -> int:
        return sum(len(b.encoded) for b in self._open.values())

    @property
    def size_bytes(self) -> int:
        """Bytes of every open batch: what the Emitter holds in memory."""
        return sum(b.size_bytes for b in self._open.values())
