"""Every dashboard panel's SQL, macros expanded, returns rows on a seeded history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from streams.history.client import connect
from streams.history.settings import ClickHouseSettings
from tests.grafana_macros import expand, panel_queries, variable_queries
from tests.integration.history.conftest import DashboardHistory

MINUTE = timedelta(minutes=1)  # the panels' interval


def test_every_panel_returns_rows(
    dashboard_history: DashboardHistory, clickhouse_settings: ClickHouseSettings
) -> None:
    h = dashboard_history
    empty: list[str] = []
    with connect(clickhouse_settings) as client:
        for board, name, sql in variable_queries():
            found = [
                r[0]
                for r in client.query(expand(sql, h.start, h.end, MINUTE, h.variables)).result_rows
            ]
            assert h.variables[name] in found, f"{board} ${name}: {found}"
        queries = list(panel_queries())
        assert len(queries) >= 20
        for q in queries:
            try:
                rows = client.query(expand(q.sql, h.start, h.end, MINUTE, h.variables)).result_rows
            except Exception as exc:  # report the panel, not just the server's words
                pytest.fail(f"{q.dashboard} / {q.panel}: {exc}")
            if not rows:
                empty.append(f"{q.dashboard} / {q.panel}")
    assert not empty, f"panels without rows: {empty}"


@pytest.mark.parametrize("server_zone", ["UTC", "Asia/Tokyo", "America/Los_Angeles"])
def test_a_date_filter_picks_the_same_days_whatever_the_servers_time_zone(
    clickhouse_settings: ClickHouseSettings, server_zone: str
) -> None:
    # 23:30 UTC is already the next day in Tokyo: a filter the server computes from a Unix time
    # (`toDate(toDateTime(…))`) would pick the 2nd there.
    late = datetime(2026, 1, 1, 23, 30, tzinfo=UTC)
    sql = expand(
        "SELECT groupArray(toString(d)) FROM "
        "(SELECT toDate('2025-12-31') + number AS d FROM numbers(3)) WHERE $__dateFilter(d)",
        late - timedelta(minutes=10),
        late,
        MINUTE,
        {},
    )
    with connect(clickhouse_settings) as client:
        days = client.query(sql, settings={"session_timezone": server_zone}).result_rows[0][0]
    assert days == ["2026-01-01"]
