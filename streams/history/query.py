"""Reading history back: rows and events of some subjects or a time range, in event-time order."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from schemas.codec import decode
from schemas.envelope import Event
from schemas.events import Trigger
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


def wait_for(
    settings: ClickHouseSettings,
    subjects: list[str],
    done: Callable[[list[HistoryRow]], bool],
    timeout_s: float,
    check: Callable[[], None] = lambda: None,
) -> list[HistoryRow]:
    """Poll the subjects' rows until `done` says so; `check` may raise to stop waiting early."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = rows_for(settings, subjects)
        if done(rows):
            return rows
        check()
        if time.monotonic() > deadline:
            seen = sorted({r.type for r in rows})
            raise TimeoutError(f"history did not settle within {timeout_s:.0f}s; saw {seen}")
        time.sleep(0.5)


def wait_for_types(
    settings: ClickHouseSettings,
    subjects: list[str],
    want: set[str],
    timeout_s: float,
    check: Callable[[], None] = lambda: None,
) -> list[HistoryRow]:
    """Poll until every type in `want` has a row."""
    try:
        return wait_for(
            settings, subjects, lambda rows: want <= {r.type for r in rows}, timeout_s, check
        )
    except TimeoutError as exc:
        raise TimeoutError(f"history did not show {sorted(want)}: {exc}") from None


PAGE_S = 1800.0  # a 1,000-node fleet: ~55k events a page, ~150 MB decoded
_EVENT_SELECT = (
    "SELECT toString(event_id), type, schema_version, source, cluster, subject, "
    "occurred_at, observed_at, payload FROM events FINAL"
)


def _events_of(rows: Sequence[Sequence[Any]]) -> list[Event]:
    """Rows of `_EVENT_SELECT` → events, through the codec (so old payloads are upcast)."""
    out: list[Event] = []
    for eid, type_, version, source, cluster, subject, occurred, observed, payload in rows:
        doc = {
            "event_id": eid,
            "type": type_,
            "schema_version": version,
            "source": source,
            "cluster": cluster,
            "subject": subject,
            "occurred_at": occurred.replace(tzinfo=UTC),
            "observed_at": observed.replace(tzinfo=UTC),
            "payload": orjson.Fragment(payload),
        }
        out.extend(decode(orjson.dumps(doc)))
    return sorted(out, key=event_time_key)


def event_time_key(event: Event) -> tuple[datetime, int, str]:
    """Event-time order; at one instant facts, then decisions, then actions, then by id.

    A trigger carries its cause's time, so the rank keeps a cause before its decision; the id
    makes the order total, so the same range always replays (and prints) the same way.
    """
    rank = 1 if isinstance(event, Trigger) else 2 if event.topic == "actions" else 0
    return (event.occurred_at, rank, str(event.event_id))


def events_between(
    settings: ClickHouseSettings,
    since: datetime,
    until: datetime,
    subjects: Sequence[str] | None = None,
) -> list[Event]:
    """Every event with `since <= occurred_at < until` (of `subjects` if given), in order: all
    held at once, so read in one query."""
    return list(stream_events_between(settings, since, until, subjects, page_s=None))


def stream_events_between(
    settings: ClickHouseSettings,
    since: datetime,
    until: datetime,
    subjects: Sequence[str] | None = None,
    page_s: float | None = PAGE_S,
) -> Iterator[Event]:
    """`events_between`, read and decoded `page_s` of event time at a time (None: the range in
    one query, for what is small or held anyway): whatever the range, the reader (and the
    server's result) holds one page. Pages are disjoint time ranges, each sorted whole, so the
    stream is in event-time order."""
    where = (
        "occurred_at >= {since:DateTime64(6, 'UTC')} AND occurred_at < {until:DateTime64(6, 'UTC')}"
    )
    params: dict[str, Any] = {}
    if subjects is not None:
        where += " AND subject IN {subjects:Array(String)}"
        params["subjects"] = list(subjects)
    query = f"{_EVENT_SELECT} WHERE {where}"
    page = until - since if page_s is None else timedelta(seconds=page_s)
    with connect(settings) as client:
        start = since
        while start < until:
            end = min(start + page, until)
            rows = client.query(query, parameters={**params, "since": start, "until": end})
            yield from _events_of(rows.result_rows)
            start = end


def events_by_id(settings: ClickHouseSettings, ids: Sequence[str]) -> dict[str, Event]:
    with connect(settings) as client:
        rows = client.query(
            f"{_EVENT_SELECT} WHERE event_id IN {{ids:Array(UUID)}}", parameters={"ids": list(ids)}
        ).result_rows
    return {str(e.event_id): e for e in _events_of(rows)}


def action_results_for(settings: ClickHouseSettings, trigger_ids: Sequence[str]) -> list[Event]:
    """The action results of some triggers, in event-time order."""
    with connect(settings) as client:
        ids = client.query(
            "SELECT DISTINCT toString(event_id) FROM action_results "
            "WHERE trigger_id IN {ids:Array(UUID)}",
            parameters={"ids": list(trigger_ids)},
        ).result_rows
    return sorted(events_by_id(settings, [r[0] for r in ids]).values(), key=event_time_key)


def jobs_on_node(settings: ClickHouseSettings, node: str, until: datetime) -> list[str]:
    """Jobs whose attempts ran on `node` (by the nodes their state changes and exits name)."""
    with connect(settings) as client:
        rows = client.query(
            "SELECT DISTINCT job_id FROM job_events WHERE has(nodes, {node:String}) "
            "AND occurred_at < {until:DateTime64(6, 'UTC')} ORDER BY job_id",
            parameters={"node": node, "until": until},
        ).result_rows
    return [r[0] for r in rows]


def triggers_naming(
    settings: ClickHouseSettings, node: str, since: datetime, until: datetime
) -> list[str]:
    """Ids of triggers whose subject is `node` or whose payload lists it among its nodes."""
    with connect(settings) as client:
        rows = client.query(
            "SELECT DISTINCT toString(event_id) FROM triggers "
            "WHERE (subject = {node:String} OR has(nodes, {node:String})) "
            "AND occurred_at >= {since:DateTime64(6, 'UTC')} "
            "AND occurred_at < {until:DateTime64(6, 'UTC')}",
            parameters={"node": node, "since": since, "until": until},
        ).result_rows
    return [r[0] for r in rows]
