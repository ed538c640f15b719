"""A bounded on-disk spool: what the Emitter could not deliver waits here, in order, until Kafka
is back. Records are appended to segment files and fsynced before `append` returns, so an event
the Emitter accepted survives a broker outage and a crash of the producing process.

Full, by its own bound (`spool_max_bytes`) or because the disk is: `append` refuses the new
records with SpoolFullError and leaves no trace of them (a partial write is cut off again), what
was spooled before stays and is redelivered, and the Emitter's caller sees the error, so the
refused event is never reported as sent.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import structlog

log = structlog.get_logger("emitter.spool")

_HEADER = struct.Struct(">IIII")  # topic, key, value, headers lengths; key length 2**32-1 = None
_NO_KEY = 0xFFFFFFFF
_SEGMENT_BYTES = 16 * 1024 * 1024
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class SpoolFullError(RuntimeError):
    """The spool reached its size limit: the event was NOT accepted."""


@dataclass(frozen=True)
class SpooledRecord:
    topic: str
    key: bytes | None
    value: bytes
    headers: list[tuple[str, bytes]]

    def encode(self) -> bytes:
        topic = self.topic.encode()
        headers = b"".join(
            struct.pack(">H", len(k.encode())) + k.encode() + struct.pack(">I", len(v)) + v
            for k, v in self.headers
        )
        key_len = _NO_KEY if self.key is None else len(self.key)
        head = _HEADER.pack(len(topic), key_len, len(self.value), len(headers))
        return head + topic + (self.key or b"") + self.value + headers

    @classmethod
    def decode(cls, data: bytes) -> SpooledRecord:
        topic_len, key_len, value_len, headers_len = _HEADER.unpack_from(data)
        pos = _HEADER.size
        topic = data[pos : pos + topic_len].decode()
        pos += topic_len
        key = None
        if key_len != _NO_KEY:
            key = data[pos : pos + key_len]
            pos += key_len
        value = data[pos : pos + value_len]
        pos += value_len
        headers, end = [], pos + headers_len
        while pos < end:
            (klen,) = struct.unpack_from(">H", data, pos)
            name = data[pos + 2 : pos + 2 + klen].decode()
            pos += 2 + klen
            (vlen,) = struct.unpack_from(">I", data, pos)
            headers.append((name, data[pos + 4 : pos + 4 + vlen]))
            pos += 4 + vlen
        return cls(topic, key, value, headers)


class Spool:
    """Segments `NNNNNNNN.seg` of length-prefixed records; `ack` advances a durable cursor.

    One writer per directory, enforced by a lock: a second process (or Emitter) that finds the
    directory taken spools into a private subdirectory instead, which the next owner of the main
    directory adopts and drains if its writer died (see `orphans`).
    """

    def __init__(self, directory: Path, max_bytes: int, *, lock: int | None = None) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._lock = lock if lock is not None else _try_lock(directory)
        if self._lock is None:
            directory = directory / "instances" / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
            directory.mkdir(parents=True)
            self._lock = _try_lock(directory)
            assert self._lock is not None
        self.directory = directory
        self.max_bytes = max_bytes
        self._cursor_file = directory / "cursor"
        self._segment, self._offset = self._read_cursor()
        # Whether anything is pending, remembered: the Emitter asks before every send, and the
        # lock makes this process the directory's only writer, so only append and ack change it.
        self._empty: bool | None = None

    @classmethod
    def unused(cls, directory: Path) -> Spool | None:
        """The spool in `directory` if no process writes to it now (its lock is free); None
        when one does. For people: listing and dropping what waits there."""
        lock = _try_lock(directory) if directory.is_dir() else None
        return None if lock is None else cls(directory, 2**63, lock=lock)

    def drop(self) -> int:
        """Forget every record not delivered yet; how many there were."""
        last = None
        count = 0
        for position, _ in self.pending():
            last, count = position, count + 1
        if last is not None:
            self.ack(last)
        return count

    def orphans(self) -> list[Spool]:
        """Private spools of writers that are gone (their lock is free), now owned by us."""
        found: list[Spool] = []
        if self.directory.parent.name == "instances":
            return found  # only the owner of the main directory adopts
        for path in sorted((self.directory / "instances").glob("*")):
            lock = _try_lock(path)
            if lock is not None:
                found.append(Spool(path, self.max_bytes, lock=lock))
        return found

    def close(self, *, remove_if_empty: bool = False) -> None:
        if remove_if_empty and self.empty and self.directory.parent.name == "instances":
            shutil.rmtree(self.directory, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def __len__(self) -> int:
        return sum(1 for _ in self.pending())

    @property
    def empty(self) -> bool:
        if self._empty is None:
            self._empty = next(iter(self.pending()), None) is None
        return self._empty

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self._segments())

    def append(self, records: list[SpooledRecord]) -> None:
        """Persist `records` (fsync) or raise SpoolFullError having persisted none of them."""
        frames = b"".join(struct.pack(">I", len(b)) + b for b in (r.encode() for r in records))
        if self.size_bytes() + len(frames) > self.max_bytes:
            raise SpoolFullError(
                f"spool {self.directory} is full ({self.size_bytes()} of {self.max_bytes} bytes);"
                f" {len(records)} event message(s) refused"
            )
        segments = self._segments()
        target = segments[-1] if segments else self._segment_path(self._segment)
        if target.exists() and target.stat().st_size + len(frames) > _SEGMENT_BYTES:
            target = self._segment_path(int(target.stem) + 1)
        existed = target.exists()
        before = target.stat().st_size if existed else 0
        try:
            with target.open("ab") as f:
                f.write(frames)
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            self._cut(target, before, existed)
            if exc.errno not in _DISK_FULL:
                raise
            raise SpoolFullError(
                f"spool {self.directory}: the disk is full ({exc.strerror}) at "
                f"{self.size_bytes()} bytes spooled; {len(records)} event message(s) refused"
            ) from exc
        self._empty = False

    @staticmethod
    def _cut(target: Path, size: int, existed: bool) -> None:
        """Undo a partial append, so the records after it stay readable."""
        if not existed:
            target.unlink(missing_ok=True)
            return
        with target.open("r+b") as f:
            f.truncate(size)

    def pending(self) -> Iterator[tuple[tuple[int, int], SpooledRecord]]:
        """Records not yet acked, oldest first, each with the cursor position just after it."""
        for path in self._segments():
            number = int(path.stem)
            if number < self._segment:
                continue
            data = path.read_bytes()
            pos = self._offset if number == self._segment else 0
            while pos + 4 <= len(data):
                (length,) = struct.unpack_from(">I", data, pos)
                if pos + 4 + length > len(data):
                    break  # a torn write at a crash: the record was never acknowledged
                record = SpooledRecord.decode(data[pos + 4 : pos + 4 + length])
                pos += 4 + length
                yield (number, pos), record

    def ack(self, position: tuple[int, int]) -> None:
        """Everything up to `position` reached Kafka; drop fully delivered segments."""
        self._segment, self._offset = position
        self._empty = None
        self._save_cursor()
        # Safe even when the cursor could not be saved: a restart then starts at the first
        # segment left, and redelivers (never loses) what was acked in it.
        for path in self._segments():
            if int(path.stem) < self._segment:
                path.unlink()
        current = self._segment_path(self._segment)
        if current.exists() and current.stat().st_size == self._offset:
            current.unlink()
            self._segment, self._offset = self._segment + 1, 0
            self._save_cursor()

    def _save_cursor(self) -> None:
        tmp = self._cursor_file.with_suffix(".tmp")
        try:
            tmp.write_text(f"{self._segment} {self._offset}")
            os.replace(tmp, self._cursor_file)
        except OSError as exc:  # a full disk: delivered segments are removed next, freeing it
            tmp.unlink(missing_ok=True)
            log.warning("spool_cursor_not_saved", dir=str(self.directory), error=repr(exc))

    def _segments(self) -> list[Path]:
        return sorted(self.directory.glob("*.seg"))

    def _segment_path(self, number: int) -> Path:
        return self.directory / f"{number:08d}.seg"

    def _read_cursor(self) -> tuple[int, int]:
        try:
            segment, offset = self._cursor_file.read_text().split()
            return int(segment), int(offset)
        except (FileNotFoundError, ValueError):
            segments = self._segments()
            return (int(segments[0].stem) if segments else 1), 0


def _try_lock(directory: Path) -> int | None:
    fd = os.open(directory / ".lock", os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def spool_dirs(directory: Path) -> list[Path]:
    """The spool directory and the private ones of writers that found it taken."""
    if not directory.is_dir():
        return []
    return [directory, *sorted(p for p in (directory / "instances").glob("*") if p.is_dir())]
