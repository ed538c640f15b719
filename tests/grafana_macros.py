"""Expand the ClickHouse datasource's macros and template variables as Grafana would."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

DASHBOARDS = Path(__file__).resolve().parents[1] / "dashboards" / "json"
_MACRO = re.compile(r"\$__(timeFilter|timeInterval|dateFilter)\(([^)]+)\)")
_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def expand(
    sql: str, start: datetime, end: datetime, interval_s: int, variables: Mapping[str, str]
) -> str:
    frm, to = int(start.timestamp()), int(end.timestamp())

    def macro(match: re.Match[str]) -> str:
        name, col = match.group(1), match.group(2).strip()
        if name == "timeFilter":
            return f"{col} >= toDateTime({frm}) AND {col} <= toDateTime({to})"
        if name == "dateFilter":
            return f"{col} >= toDate(toDateTime({frm})) AND {col} <= toDate(toDateTime({to}))"
        return f"toStartOfInterval(toDateTime({col}), INTERVAL {interval_s} second)"

    sql = _MACRO.sub(macro, sql)
    sql = (
        sql.replace("$__fromTime", f"toDateTime({frm})")
        .replace("$__toTime", f"toDateTime({to})")
        .replace("$__interval_s", str(interval_s))
    )

    def variable(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in variables:
            raise KeyError(f"template variable ${name} has no value")
        return variables[name]

    expanded = _VARIABLE.sub(variable, sql)
    if "$" in expanded:
        raise ValueError(f"unexpanded macro left in: {expanded}")
    return expanded


@dataclass(frozen=True)
class PanelQuery:
    dashboard: str
    panel: str
    sql: str


def dashboards() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted(DASHBOARDS.glob("*.json")):
        yield path.name, json.loads(path.read_text())


def panel_queries() -> Iterator[PanelQuery]:
    for name, board in dashboards():
        for panel in board["panels"]:
            for target in panel.get("targets", []):
                yield PanelQuery(name, panel["title"], target["rawSql"])


def variable_queries() -> Iterator[tuple[str, str, str]]:
    """(dashboard, variable, SQL) of every query variable, in the order Grafana resolves them."""
    for name, board in dashboards():
        for var in board["templating"]["list"]:
            yield name, var["name"], var["query"]
