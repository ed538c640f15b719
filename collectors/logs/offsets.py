"""Offsets per file identity (device:inode, checked by a hash of the first bytes), on disk.

An inode can be reused by a new file and a file can be truncated and rewritten: the hash of
its first bytes tells those apart from the file we were reading, which then starts over at 0.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson

HEAD_BYTES = 128


@dataclass
class FileRecord:
    path: str
    offset: int
    head_len: int
    head_sha1: str


def identity(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino}"


def head_digest(fd: int, length: int) -> str:
    return hashlib.sha1(os.pread(fd, length, 0)).hexdigest()


class OffsetStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: dict[str, FileRecord] = {}
        if path.exists():
            raw = orjson.loads(path.read_bytes())
            self.records = {key: FileRecord(**value) for key, value in raw.items()}

    def resume_offset(self, key: str, fd: int, size: int) -> int:
        """Where to start reading an opened file: the saved offset if it is the same file."""
        record = self.records.get(key)
        if record is None or size < record.offset or size < record.head_len:
            return 0
        if head_digest(fd, record.head_len) != record.head_sha1:
            return 0
        return record.offset

    def update(self, key: str, path: str, fd: int, offset: int, size: int) -> None:
        record = self.records.get(key)
        head_len = min(size, HEAD_BYTES)
        if record is None or record.head_len != head_len or record.offset > offset:
            record = FileRecord(path, offset, head_len, head_digest(fd, head_len))
            self.records[key] = record
        record.path = path
        record.offset = offset

    def forget_gone(self, followed: set[str]) -> None:
        """Drop records of files no longer at their last path (keeps the store bounded)."""
        for key, record in list(self.records.items()):
            if key in followed:
                continue
            try:
                gone = identity(os.stat(record.path)) != key
            except OSError:
                gone = True
            if gone:
                del self.records[key]

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_bytes(orjson.dumps({k: asdict(v) for k, v in self.records.items()}))
        os.replace(tmp, self.path)
