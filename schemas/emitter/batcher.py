"""Coalesces events of high-volume families into one message per key (see DESIGN: Faust's cost is
per Kafka message, so batching is what lets the streams keep up)."""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas.codec import encode
from schemas.envelope import Event


@dataclass
class PendingBatch:
    topic: str
    key: bytes
    encoded: list[bytes] = field(default_factory=list)
    size_bytes: int = 2

    def add(self, event: Event) -> None:
        body = encode(event)
        self.encoded.append(body)
        self.size_bytes += len(body) + 1

    def value(self) -> bytes:
        return b"[" + b",".join(self.encoded) + b"]"


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
