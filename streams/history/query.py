"""Reading history back: rows and events of some subjects or a time range, in event-time order."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from schemas.codec import decode
from schemas.envelope import Event
from schemas.events import Trigger
from schemas.registry import event_types
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


# Pages of about this many events (~40 MB of rows for 50k; two are held at a time): the
# server's cost per query is ~10 ms whatever its size (it reads a day's partition), so a small
# fleet's pages span hours and a large one's minutes.
PAGE_EVENTS = 50_000
FIRST_PAGE_S = 60.0  # before a range's density is known
PAGE_GROWTH_MAX = 8.0  # a span grows at most this much from one page to the next


def _utc_json(column: str) -> str:
    """`"2026-01-01T00:00:00.000001Z"`, as producers write a time (the contract's time check takes
    that as text); `toString` of a `DateTime64(6, 'UTC')` always gives its six digits."""
    return f"toJSONString(concat(replaceOne(toString({column}), ' ', 'T'), 'Z'))"


# Each row as the message it came in, written by the server: a row then costs the reader what a
# message costs a consumer (the codec's one pass; old versions are upcast there). The values are
# SQL giving each field's JSON text.
_EVENT_JSON = {
    "event_id": "toJSONString(toString(event_id))",
    "type": "toJSONString(type)",
    "schema_version": "toString(schema_version)",
    "source": "toJSONString(source)",
    "cluster": "toJSONString(cluster)",
    "subject": "toJSONString(subject)",
    "occurred_at": _utc_json("occurred_at"),
    "observed_at": _utc_json("observed_at"),
    # Line breaks are JSON's whitespace between tokens (a string cannot hold one unescaped):
    # blanks instead keep each row on its line. Ours have none; this holds whoever wrote it.
    "payload": "replaceAll(payload, '\\n', ' ')",
}
_FIELDS_SQL = ", ',', ".join(f"'\"{name}\":', {sql}" for name, sql in _EVENT_JSON.items())
_EVENT_SELECT = f"SELECT concat('{{', {_FIELDS_SQL}, '}}') AS doc FROM events FINAL"
# Looking events up by id needs no FINAL (a merge of the whole table, seconds on a day of a large
# fleet): a copy the sink wrote twice is the same event, and the caller keys them by id.
_EVENT_SELECT_BY_ID = _EVENT_SELECT.removesuffix(" FINAL")


# A page's time range as PREWHERE: the server reads only the page's rows before FINAL merges
# their copies, not the whole day's partition (a third less of its CPU a page, at 300 or 1,000
# nodes). Exact: `occurred_at` is in the sorting key, so every copy FINAL merges has the same.
_IN_PAGE = (
    "PREWHERE occurred_at >= {since:DateTime64(6, 'UTC')} "
    "AND occurred_at < {until:DateTime64(6, 'UTC')}"
)


def _where(conditions: list[str]) -> str:
    return f" WHERE {' AND '.join(conditions)}" if conditions else ""


_SPAN_MIN = timedelta(microseconds=1)  # the column's precision: a page always moves on


def _query_docs(client: Any, query: str, parameters: dict[str, Any]) -> list[bytes]:
    """The documents of an `_EVENT_SELECT` query, in its rows' order: one a line, as the server
    writes them (TSVRaw is not escaped), split in one call; the Native format's rows cost the
    client a Python object each, and this project's local server a Python pass over them."""
    text: bytes = client.raw_query(query, parameters=parameters, fmt="TabSeparatedRaw")
    return text.split(b"\n")[:-1]


def _query_events(client: Any, query: str, parameters: dict[str, Any]) -> list[Event]:
    """The events of an `_EVENT_SELECT` query, in its rows' order."""
    return [event for doc in _query_docs(client, query, parameters) for event in decode(doc)]


def event_time_key(event: Event) -> tuple[datetime, int, str]:
    """Event-time order; at one instant facts, then decisions, then actions, then by id.

    A trigger carries its cause's time, so the rank keeps a cause before its decision; the id
    makes the order total, so the same range always replays (and prints) the same way.
    """
    return (event.occurred_at, _rank(type(event)), str(event.event_id))


def _rank(cls: type[Event]) -> int:
    return 1 if issubclass(cls, Trigger) else 2 if cls.topic == "actions" else 0


# `event_time_key` as ClickHouse sorts (the server sorts a page far faster than Python compares
# aware datetimes); ids sort as their text, as in Python.
_EVENT_TIME_ORDER = (
    " ORDER BY occurred_at, multiIf(has({decision_types:Array(String)}, type), 1, "
    "has({action_types:Array(String)}, type), 2, 0), toString(event_id)"
)


def _event_time_order_parameters() -> dict[str, list[str]]:
    ranks = {name: _rank(cls) for name, cls in event_types().items()}
    return {
        "decision_types": [name for name, rank in ranks.items() if rank == 1],
        "action_types": [name for name, rank in ranks.items() if rank == 2],
    }


def events_between(
    settings: ClickHouseSettings,
    since: datetime,
    until: datetime,
    subjects: Sequence[str] | None = None,
) -> list[Event]:
    """Every event with `since <= occurred_at < until` (of `subjects` if given), in order: all
    held at once, so read in one query."""
    return list(stream_events_between(settings, since, until, subjects, page_events=None))


def stream_events_between(
    settings: ClickHouseSettings,
    since: datetime,
    until: datetime,
    subjects: Sequence[str] | None = None,
    page_events: int | None = PAGE_EVENTS,
    narrowed: tuple[str, dict[str, Any]] | None = None,
) -> Iterator[Event]:
    """`events_between`, read and decoded a page of about `page_events` at a time (None: the
    range in one query, for what is small or held anyway): whatever the range, the reader holds
    two pages, one decoded as it is read and the next, undecoded, read meanwhile (a thread waits
    on the server, which finds, sorts and writes the next page while this one is re-decided: that
    wait was ~15 % of a replay). Pages are disjoint time ranges, each sorted whole, so the
    stream is in event-time order; each spans what the last one's density says holds about
    `page_events`. `narrowed` is one more SQL condition, with its parameters."""
    where: list[str] = []
    params: dict[str, Any] = {}
    if subjects is not None:
        where.append("subject IN {subjects:Array(String)}")
        params["subjects"] = list(subjects)
    if narrowed is not None:
        where.append(f"({narrowed[0]})")
        params.update(narrowed[1])
    params.update(_event_time_order_parameters())
    query = f"{_EVENT_SELECT} {_IN_PAGE}{_where(where)}{_EVENT_TIME_ORDER}"
    if since >= until:
        return
    span = until - since if page_events is None else timedelta(seconds=FIRST_PAGE_S)
    with (
        connect(settings) as client,
        ThreadPoolExecutor(1, thread_name_prefix="history-page") as reader,
    ):

        def read(start: datetime, end: datetime) -> list[bytes]:
            return _query_docs(client, query, {**params, "since": start, "until": end})

        end = min(since + span, until)
        ahead: Future[list[bytes]] | None = reader.submit(read, since, end)
        while ahead is not None:
            docs = ahead.result()
            ahead = None
            if end < until:
                if page_events is not None:
                    span *= min(page_events / max(len(docs), 1), PAGE_GROWTH_MAX)
                start, end = end, min(end + max(span, _SPAN_MIN), until)
                ahead = reader.submit(read, start, end)
            yield from (event for doc in docs for event in decode(doc))


def events_by_id(settings: ClickHouseSettings, ids: Sequence[str]) -> dict[str, Event]:
    with connect(settings) as client:
        events = _query_events(
            client,
            f"{_EVENT_SELECT_BY_ID} WHERE event_id IN {{ids:Array(UUID)}}",
            {"ids": list(ids)},
        )
    return {str(e.event_id): e for e in events}


def action_results_for(settings: ClickHouseSettings, trigger_ids: Sequence[str]) -> list[Event]:
    """The action results of some triggers, in event-time order."""
    with connect(settings) as client:
        ids = client.query(
            "SELECT DISTINCT toString(event_id) FROM action_results "
            "WHERE trigger_id IN {ids:Array(UUID)}",
            parameters={"ids": list(trigger_ids)},
        ).result_rows
    return sorted(events_by_id(settings, [r[0] for r in ids]).values(), key=event_time_key)


def status_before(
    settings: ClickHouseSettings, subjects: Sequence[str], before: datetime
) -> dict[str, tuple[datetime, dict[str, Any]]]:
    """Each subject's last status (what the streams worker showed of it) before `before`, with
    its time; subjects with none are left out."""
    if not subjects:
        return {}
    with connect(settings) as client:
        rows = client.query(
            "SELECT subject, max(occurred_at), argMax(payload, occurred_at) FROM events "
            "WHERE type IN ('NodeStatusChanged', 'JobStatusChanged') "
            "AND subject IN {subjects:Array(String)} "
            "AND occurred_at < {before:DateTime64(6, 'UTC')} GROUP BY subject",
            parameters={"subjects": list(subjects), "before": before},
        ).result_rows
    return {subject: (_utc(at), orjson.loads(payload)) for subject, at, payload in rows}


def _utc(at: datetime) -> datetime:
    return at if at.tzinfo else at.replace(tzinfo=UTC)


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
