"""What a watcher already emitted, per subject, kept on disk so a restart sends no duplicates."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson


class Ledger:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, dict[str, Any]] = {}
        if path.exists():
            self.entries = orjson.loads(path.read_bytes())
        self._dirty = False

    def get(self, subject: str) -> dict[str, Any] | None:
        return self.entries.get(subject)

    def put(self, subject: str, entry: dict[str, Any]) -> None:
        self.entries[subject] = entry
        self._dirty = True

    def drop(self, subject: str) -> None:
        if self.entries.pop(subject, None) is not None:
            self._dirty = True

    def save(self) -> None:
        if not self._dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_bytes(orjson.dumps(self.entries))
        os.replace(tmp, self.path)
        self._dirty = False
