"""Every dashboard panel's SQL, macros expanded, returns rows on a seeded history."""

from __future__ import annotations

from datetime import timedelta

import pytest

from schemas.deadletter import DeadLetter
from streams.history.client import connect
from streams.history.rows import DEAD_LETTER_COLUMNS, dead_letter_row
from streams.history.settings import ClickHouseSettings
from tests.grafana_macros import expand, panel_queries, variable_queries
from tests.integration.history.conftest import Seeded

VALUES = {"cluster": "sim", "node": "n-07", "job": "slurm/sim/1001"}


def test_every_panel_returns_rows(seeded: Seeded, clickhouse_settings: ClickHouseSettings) -> None:
    start, end = seeded.now - timedelta(hours=6), seeded.now + timedelta(minutes=1)
    letter = DeadLetter(
        reason="malformed",
        consumer="streams",
        topic="jobs",
        partition=0,
        offset=1,
        raw=b"{",
        dead_lettered_at=seeded.now - timedelta(minutes=3),
    )
    empty: list[str] = []
    with connect(clickhouse_settings) as client:
        client.insert("dead_letters", [dead_letter_row(letter)], column_names=DEAD_LETTER_COLUMNS)
        for board, name, sql in variable_queries():
            found = [r[0] for r in client.query(expand(sql, start, end, 60, VALUES)).result_rows]
            assert VALUES[name] in found, f"{board} ${name}: {found}"
        queries = list(panel_queries())
        assert len(queries) >= 20
        for q in queries:
            try:
                rows = client.query(expand(q.sql, start, end, 60, VALUES)).result_rows
            except Exception as exc:  # report the panel, not just the server's words
                pytest.fail(f"{q.dashboard} / {q.panel}: {exc}")
            if not rows:
                empty.append(f"{q.dashboard} / {q.panel}")
    assert not empty, f"panels without rows: {empty}"
