"""Record batches that cannot be read become one marked record instead of a crashed consumer.

aiokafka unpacks a fetched record batch (CRC, decompression, record framing) inside the
consumer's fetch. A batch it cannot unpack (a codec it cannot decode, a corrupt frame) raised out
of every fetch of that partition: the worker crashed, and crashed again on every restart at the
same offset. Here each batch is unpacked up front; one that fails is replaced by a single record
at the batch's last offset, carrying the batch's raw bytes and a header that says why. The app
dead-letters it and commits past it like any message, so the partition goes on after it.

The header carries a token drawn per process, so no producer can forge the mark.
"""

from __future__ import annotations

import secrets
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from aiokafka.consumer import fetcher

HEADER = "centrality-unreadable-batch"
_TOKEN = secrets.token_hex(16).encode()
_LENGTH = struct.Struct(">i")  # a batch: base offset (8 bytes), length (4), then `length` bytes

_original = fetcher.MemoryRecords


@dataclass(frozen=True)
class _Marker:
    """Quacks like the record aiokafka's fetcher turns into a ConsumerRecord."""

    offset: int
    timestamp: int
    value: bytes
    headers: list[tuple[str, bytes]]
    timestamp_type: int = 0
    key: bytes | None = None
    checksum: None = None


@dataclass
class _Batch:
    """A batch, unpacked when first asked; unreadable ones yield one marker record."""

    batch: Any
    raw: bytes
    _records: list[Any] | None = None
    _iterator: Iterator[Any] | None = field(default=None, repr=False)

    def __getattr__(self, name: str) -> Any:  # header fields: offsets, producer, control flags
        return getattr(self.batch, name)

    def validate_crc(self) -> bool:
        if self._records is None and not self.batch.validate_crc():
            self._records = [self._marker("corrupt-batch", "record batch CRC does not match")]
        return True  # a mismatch is reported by the marker, not by failing the fetch

    def __iter__(self) -> Iterator[Any]:
        if self._records is None:
            try:
                self._records = list(self.batch)
            except Exception as exc:  # the codec, a varint, a length: whatever cannot be read
                self._records = [self._marker(_reason(exc), f"{type(exc).__name__}: {exc}")]
        return iter(self._records)

    def __next__(self) -> Any:
        if self._iterator is None:
            self._iterator = iter(self)
        return next(self._iterator)

    def _marker(self, reason: str, detail: str) -> _Marker:
        return _Marker(
            offset=self.batch.next_offset - 1,
            timestamp=getattr(self.batch, "max_timestamp", -1),
            value=self.raw,
            headers=[(HEADER, b"|".join((_TOKEN, reason.encode(), detail.encode())))],
        )


def _reason(exc: Exception) -> str:
    return "unsupported-codec" if type(exc).__name__ == "UnsupportedCodecError" else "corrupt-batch"


class Records:
    """aiokafka's MemoryRecords, handing out `_Batch`es that know their raw bytes."""

    def __init__(self, data: bytes) -> None:
        self._data = memoryview(data)
        self._records = _original(data)
        self._pos = 0

    def size_in_bytes(self) -> int:
        return int(self._records.size_in_bytes())

    def has_next(self) -> bool:
        return bool(self._records.has_next())

    def next_batch(self) -> _Batch | None:
        batch = self._records.next_batch()
        if batch is None:
            return None
        length = _LENGTH.unpack_from(self._data, self._pos + 8)[0]
        end = self._pos + 12 + length
        raw, self._pos = bytes(self._data[self._pos : end]), end
        return _Batch(batch, raw)


def install() -> None:
    fetcher.MemoryRecords = Records  # the fetcher's only use of the name


def unreadable(headers: Any) -> tuple[str, str] | None:
    """(reason, detail) when a record is our marker for an unreadable batch, else None."""
    for name, value in headers or ():
        if name == HEADER:
            token, _, rest = bytes(value).partition(b"|")
            if token == _TOKEN:
                reason, _, detail = rest.partition(b"|")
                return reason.decode(), detail.decode(errors="replace")
    return None
