"""Reading history back: the rows of some subjects, in event-time order."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from streams.history.client import connect
from streams.history.settings import ClickHouseSettings


@dataclass(frozen=True)
class HistoryRow:
    occurred_at: datetime
    subject: str
    type: str
    source: str
    event_id: str
    payload: str


def rows_for(settings: ClickHouseSettings, subjects: list[str]) -> list[HistoryRow]:
    with connect(settings) as client:
        result = client.query(
            "SELECT occurred_at, subject, type, source, toString(event_id), payload "
            "FROM events FINAL WHERE subject IN {subjects:Array(String)} "
            "ORDER BY occurred_at, type, event_id",
            parameters={"subjects": subjects},
        )
        return [HistoryRow(*row) for row in result.result_rows]


def wait_for_types(
    settings: ClickHouseSettings,
    subjects: list[str],
    want: set[str],
    timeout_s: float,
    check: Callable[[], None] = lambda: None,
) -> list[HistoryRow]:
    """Poll until every type in `want` has a row; `check` may raise to stop waiting early."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = rows_for(settings, subjects)
        seen = {r.type for r in rows}
        if want <= seen:
            return rows
        check()
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"history did not show {sorted(want - seen)} within {timeout_s:.0f}s;"
                f" saw {sorted(seen)}"
            )
        time.sleep(0.5)
