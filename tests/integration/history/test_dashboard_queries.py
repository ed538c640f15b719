"""Every dashboard panel's SQL, macros expanded, returns rows on a seeded history; holds are
held, never failures, and incidents are counted as they are."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from streams.history.client import connect
from streams.history.settings import ClickHouseSettings
from tests.grafana_macros import expand, panel_queries, variable_queries
from tests.integration.history.conftest import DashboardHistory

MINUTE = timedelta(minutes=1)  # the panels' interval
HOUR = timedelta(hours=1)


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


def panel_rows(
    h: DashboardHistory, settings: ClickHouseSettings, board: str, title: str
) -> list[tuple[Any, ...]]:
    [q] = [q for q in panel_queries() if q.dashboard == board and q.panel == title]
    with connect(settings) as client:
        found = client.query(expand(q.sql, h.start, h.end, HOUR, h.variables)).result_rows
    return [tuple(r) for r in found]


def test_holds_are_held_and_incidents_are_counted_on_the_dashboards(
    dashboard_history: DashboardHistory, clickhouse_settings: ClickHouseSettings
) -> None:
    h, settings = dashboard_history, clickhouse_settings
    results = "Results per interval: succeeded, failed, refused, held"
    outcomes = Counter[str]()
    for _, outcome, n in panel_rows(h, settings, "remediation-audit.json", results):
        outcomes[outcome] += n
    # The hold, and the one recorded before ActionHeld existed, are held; none is a failure.
    assert outcomes["held"] == 2 and outcomes["refused"] == 1 and outcomes["failed"] == 0
    [held] = panel_rows(h, settings, "remediation-audit.json", "Held by silences")
    assert held[:5] == ("s-seed", 2, "quarantine_nodes", 2, "n-20, n-21")
    [(open_now, nodes)] = panel_rows(h, settings, "incidents.json", "Open incidents now")
    assert (open_now, nodes) == (1, 1)
    [resolved] = panel_rows(
        h, settings, "incidents.json", "Time to resolve by kind (first fault → resolved)"
    )
    assert resolved[:3] == ("heartbeat_lost", 1, 740.0)  # 20 s of faults, 12 min to resolve
    by_size = panel_rows(h, settings, "incidents.json", "Nodes per incident")
    assert by_size == [("inc-s12", 10), ("inc-n07", 1)]
