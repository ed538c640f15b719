"""Every dashboard panel's SQL, macros expanded, returns rows on a seeded history."""

from __future__ import annotations

import pytest

from streams.history.client import connect
from streams.history.settings import ClickHouseSettings
from tests.grafana_macros import expand, panel_queries, variable_queries
from tests.integration.history.conftest import DashboardHistory


def test_every_panel_returns_rows(
    dashboard_history: DashboardHistory, clickhouse_settings: ClickHouseSettings
) -> None:
    h = dashboard_history
    empty: list[str] = []
    with connect(clickhouse_settings) as client:
        for board, name, sql in variable_queries():
            found = [
                r[0] for r in client.query(expand(sql, h.start, h.end, 60, h.variables)).result_rows
            ]
            assert h.variables[name] in found, f"{board} ${name}: {found}"
        queries = list(panel_queries())
        assert len(queries) >= 20
        for q in queries:
            try:
                rows = client.query(expand(q.sql, h.start, h.end, 60, h.variables)).result_rows
            except Exception as exc:  # report the panel, not just the server's words
                pytest.fail(f"{q.dashboard} / {q.panel}: {exc}")
            if not rows:
                empty.append(f"{q.dashboard} / {q.panel}")
    assert not empty, f"panels without rows: {empty}"
