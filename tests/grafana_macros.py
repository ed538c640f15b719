"""What Grafana sends ClickHouse for a dashboard query: the dashboard's template variables replaced
(Grafana's frontend does that), then the ClickHouse plugin's macros expanded (its backend does),
as `grafana-clickhouse-datasource` 4.20.0 does it (the version infra/compose pins; its
`pkg/macros/macros.go` on the `grafana/macropro` engine, and its query-editor docs):

- comments go first: `-- …` to the end of the line and `/* … */` become as many spaces, so a
  macro in a comment is never expanded. Quoted text is not a comment: `'…'` and `"…"` (doubled
  quotes and backslash escapes inside), `` `…` `` identifiers and `$tag$…$tag$` strings;
- then each macro, the longest names first, with its arguments split at top-level commas; a macro
  inside another's arguments is expanded first. Quoting does not hide a macro: one inside a
  string literal is expanded too (the engine has no notion of literals, only of comments);
- the time range is Grafana's, in milliseconds; `toDate('YYYY-MM-DD')` is the date in the
  plugin process's zone (`zone`: UTC, as in Grafana's image), never a function of the ClickHouse
  server's; every interval is floored, at 1 s for the second forms and 1 ms for the `_ms` ones.

Macros the plugin has that this does not model (`$__timeGroup`, `$__conditionalAll`, the statement
macros, `$__interval`, `$__table`…) are refused (`ValueError`), so a dashboard that starts using
one fails here until they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

PLUGIN_VERSION = "4.20.0"  # grafana-clickhouse-datasource, as infra/compose installs it
PLUGIN_DRIVER = "v2.47.0"  # its clickhouse-go, which tests/go/clickhouse runs the queries with
DASHBOARDS = Path(__file__).resolve().parents[1] / "dashboards" / "json"
# Grafana's frontend: `$name` and `${name}`; names starting `__` are the plugin's macros.
_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")
_MACRO_LEFT = re.compile(r"\$__\w+")
_DOLLAR_TAG = re.compile(r"\$(\w*)\$")
_LINE_END = re.compile(r"[\r\n]")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Query:
    """What the plugin is handed with the SQL: the panel's time range and interval."""

    start: datetime
    end: datetime
    interval: timedelta
    zone: tzinfo = UTC

    def ms(self, at: datetime) -> int:
        return (at - _EPOCH) // timedelta(milliseconds=1)

    def date(self, at: datetime) -> str:
        return f"toDate('{datetime.fromtimestamp(self.ms(at) / 1000, self.zone):%Y-%m-%d}')"

    def seconds(self, at: datetime) -> str:
        return f"toDateTime({self.ms(at) // 1000})"

    def millis(self, at: datetime) -> str:
        return f"fromUnixTimestamp64Milli({self.ms(at)})"

    @property
    def interval_s(self) -> int:
        return int(max(self.interval / timedelta(seconds=1), 1))

    @property
    def interval_ms(self) -> int:
        return max(self.interval // timedelta(milliseconds=1), 1)


Macro = Callable[[Query, list[str]], str]


def _between(column: str, low: str, high: str) -> str:
    return f"{column} >= {low} AND {column} <= {high}"


def _one(name: str, make: Callable[[Query, str], str]) -> Macro:
    def macro(q: Query, args: list[str]) -> str:
        if len(args) != 1:
            raise ValueError(f"$__{name} takes one argument, got {len(args)}: {args}")
        return make(q, args[0])

    return macro


def _date_time(q: Query, args: list[str]) -> str:
    if len(args) != 2:
        raise ValueError(f"$__dateTimeFilter takes two arguments, got {len(args)}: {args}")
    date, time = args
    return (
        f"({_between(date, q.date(q.start), q.date(q.end))}) AND "
        f"({_between(time, q.seconds(q.start), q.seconds(q.end))})"
    )


MACROS: dict[str, Macro] = {
    "fromTime": lambda q, _: q.seconds(q.start),
    "toTime": lambda q, _: q.seconds(q.end),
    "fromTime_ms": lambda q, _: q.millis(q.start),
    "toTime_ms": lambda q, _: q.millis(q.end),
    "timeFilter": _one(
        "timeFilter", lambda q, c: _between(c, q.seconds(q.start), q.seconds(q.end))
    ),
    "timeFilter_ms": _one(
        "timeFilter_ms", lambda q, c: _between(c, q.millis(q.start), q.millis(q.end))
    ),
    "dateFilter": _one("dateFilter", lambda q, c: _between(c, q.date(q.start), q.date(q.end))),
    "dateTimeFilter": _date_time,
    "dt": _date_time,
    "timeFrom": _one("timeFrom", lambda q, c: f"{c} >= {q.seconds(q.start)}"),
    "timeTo": _one("timeTo", lambda q, c: f"{c} <= {q.seconds(q.end)}"),
    "timeInterval": _one(
        "timeInterval",
        lambda q, c: f"toStartOfInterval(toDateTime({c}), INTERVAL {q.interval_s} second)",
    ),
    "timeInterval_ms": _one(
        "timeInterval_ms",
        lambda q, c: (
            f"toStartOfInterval(toDateTime64({c}, 3), INTERVAL {q.interval_ms} millisecond)"
        ),
    ),
    "interval_s": lambda q, _: str(q.interval_s),
}
# Longest first, so `$__timeFilter_ms` is never taken for `$__timeFilter` and its rest.
_NAMES = sorted(MACROS, key=lambda n: (-len(n), n))


def expand(
    sql: str,
    start: datetime,
    end: datetime,
    interval: timedelta,
    variables: Mapping[str, str],
    zone: tzinfo = UTC,
) -> str:
    """The SQL ClickHouse gets for `sql` over [start, end] at `interval`."""
    expanded = interpolate(_variables(sql, variables), Query(start, end, interval, zone))
    left = _MACRO_LEFT.findall(expanded)
    if left:
        raise ValueError(f"macros this model of the plugin lacks: {sorted(set(left))}")
    return expanded


def _variables(sql: str, variables: Mapping[str, str]) -> str:
    """Grafana's frontend: the dashboard's variables, wherever they are; other names are left
    (a `$__` macro, a `$tag$` quote, or a variable the dashboard lacks: its unit test says so)."""

    def variable(match: re.Match[str]) -> str:
        return variables.get(match.group(1) or match.group(2), match.group(0))

    return _VARIABLE.sub(variable, sql)


def interpolate(sql: str, query: Query) -> str:
    """The plugin's step alone: comments blanked, then its macros expanded."""
    return _macros(strip_comments(sql), query)


def _macros(sql: str, query: Query) -> str:
    for name in _NAMES:
        sql = _replace(sql, name, query)
    return sql


def _replace(sql: str, name: str, query: Query) -> str:
    token = f"$__{name}"
    out: list[str] = []
    while (at := sql.find(token)) >= 0:
        after = at + len(token)
        if after < len(sql) and (sql[after].isalnum() or sql[after] == "_"):
            out.append(sql[:after])  # the start of a longer name: not this macro
            sql = sql[after:]
            continue
        out.append(sql[:at])
        sql = sql[after:]
        raw = ""
        if sql.startswith("(") and (close := _closing_paren(sql)) >= 0:
            raw, sql = sql[1:close], sql[close + 1 :]
        out.append(MACROS[name](query, _arguments(_macros(raw, query))))
    return "".join(out) + sql


def _closing_paren(text: str) -> int:
    """Where the `(` at 0 closes (-1: never, and the macro then takes no arguments)."""
    depth, i = 0, 0
    while i < len(text):
        char = text[i]
        if char in "'\"":
            i = _literal_end(text, i, backslash=False)
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return i
        i += 1
    return -1


def _arguments(raw: str) -> list[str]:
    raw = raw.strip()
    if not raw:
        return []
    args, depth, start, i = [], 0, 0, 0
    while i < len(raw):
        char = raw[i]
        if char in "'\"":
            i = _literal_end(raw, i, backslash=False)
            continue
        if char in "()":
            depth += 1 if char == "(" else -1
        elif char == "," and depth == 0:
            args.append(raw[start:i].strip())
            start = i + 1
        i += 1
    return [*args, raw[start:].strip()]


def strip_comments(sql: str) -> str:
    """`--` and `/* */` comments as spaces, ClickHouse's quoting respected (the plugin's lexer:
    quotes with backslash escapes, backtick identifiers, dollar-quoted strings)."""
    out: list[str] = []
    i = 0
    while i < len(sql):
        char, pair = sql[i], sql[i : i + 2]
        if char in "'\"`":
            end = _literal_end(sql, i, backslash=char != "`")
        elif (
            char == "$" and (tag := _DOLLAR_TAG.match(sql, i)) and sql.find(tag[0], tag.end()) >= 0
        ):
            end = sql.find(tag[0], tag.end()) + len(tag[0])
        elif pair == "--":
            end = min(
                (j for j in (sql.find("\n", i), sql.find("\r", i)) if j >= 0), default=len(sql)
            )
            out.append(" " * (end - i))
            i = end
            continue
        elif pair == "/*":
            close = sql.find("*/", i + 2)
            end = len(sql) if close < 0 else close + 2
            out.append(" " * (end - i))
            i = end
            continue
        else:
            end = i + 1
        out.append(sql[i:end])
        i = end
    return "".join(out)


def _dollar_quote_end(text: str, start: int) -> int:
    """Just past a `$tag$…$tag$` string opening at `start`; -1 when none does."""
    tag = _DOLLAR_TAG.match(text, start)
    close = text.find(tag[0], tag.end()) if tag else -1
    return -1 if tag is None or close < 0 else close + len(tag[0])


def _literal_end(text: str, start: int, *, backslash: bool) -> int:
    """Just past the quoted text opening at `start` (its end when it never closes)."""
    quote, i = text[start], start + 1
    while i < len(text):
        if backslash and text[i] == "\\":
            i += 2
        elif text[i] == quote:
            if text[i + 1 : i + 2] != quote:
                return i + 1
            i += 2
        else:
            i += 1
    return len(text)


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
