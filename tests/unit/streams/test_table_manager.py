"""The streams app's table manager registers every table's changelog as it starts, without
Faust's second of waiting for tables made late (streams/faust/table_manager.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streams.faust.table_manager import TableManager
from tests.support.streams_app import in_memory


async def test_the_tables_are_registered_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = in_memory(tmp_path, "table-manager-test-key").app
    manager = app.tables
    assert isinstance(manager, TableManager)

    async def slept(seconds: float) -> None:
        raise AssertionError(f"the table manager slept {seconds} s as it started")

    recovered: list[Any] = []

    async def recovery_started() -> None:
        recovered.append(manager.recovery)

    monkeypatch.setattr(manager, "sleep", slept)
    monkeypatch.setattr(manager.recovery, "start", recovery_started)
    monkeypatch.setattr(app.consumer, "assignment", set)  # not started: nothing assigned yet
    started: list[str] = []
    for table in manager.values():  # a table declares its changelog topic as it starts

        async def start(name: str = table.name) -> None:
            started.append(name)

        monkeypatch.setattr(table, "maybe_start", start)
    await manager.on_start()
    assert manager._tables_registered.is_set()
    assert {t.name for t in manager._channels} == set(manager) and len(manager) >= 4
    assert started == list(manager)
    assert recovered == [manager.recovery]
    with pytest.raises(RuntimeError, match="Too late to add tables"):
        app.Table("made-late")
