"""The chDB engine behind the HTTP server: connections, HTTP sessions and query-scoped settings.

chDB hosts one engine per process; each `chdb.connect()` to its path is a cheap handle (~0.5 ms)
with its own session state (current database, SET values), and queries on different handles may
run in parallel. So a request without `session_id` gets a fresh handle that dies with it, and an
HTTP session keeps one handle for its lifetime. One anchor handle stays open all along, because the
engine shuts down (and flushes) when its last handle closes.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import chdb

from centrality.stack.clickhouse_http import (
    ClickHouseError,
    InsertWithData,
    is_set_statement,
    is_use_statement,
)

_TRAILING_FORMAT = re.compile(r"\s+FORMAT\s+[A-Za-z0-9_]+\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class QueryRequest:
    sql: str
    insert: InsertWithData | None = None
    data: memoryview | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    settings: Mapping[str, str] = field(default_factory=dict)
    database: str | None = None
    default_format: str = "TabSeparated"
    session_id: str | None = None
    session_timeout_s: float = 60.0
    session_check: bool = False


@dataclass(frozen=True)
class QueryResult:
    body: bytes
    read_rows: int = 0
    read_bytes: int = 0
    written_rows: int = 0
    written_bytes: int = 0
    elapsed_ns: int = 0


@dataclass
class _Handle:
    conn: Any
    persistent: bool
    lock: threading.Lock = field(default_factory=threading.Lock)
    # URL settings currently SET on this handle, and what to restore them to (None: DEFAULT).
    applied: dict[str, str] = field(default_factory=dict)
    baseline: dict[str, str | None] = field(default_factory=dict)
    database: str | None = None
    timeout_s: float = 60.0
    last_used: float = field(default_factory=time.monotonic)

    def expired(self, now: float) -> bool:
        return now - self.last_used > self.timeout_s


class Engine:
    """Runs ClickHouse queries on one data directory; safe to call from many threads."""

    def __init__(self, data_dir: str) -> None:
        self._path = data_dir
        self._anchor: Any = None
        self._sessions: dict[str, _Handle] = {}
        self._lock = threading.Lock()
        self._active = 0
        self._idle = threading.Condition(self._lock)
        self._closed = False
        self.version = ""
        self.timezone = "UTC"

    def open(self) -> None:
        self._anchor = chdb.connect(self._path)
        row = self._anchor.query("SELECT version(), timezone()", "TabSeparated").bytes()
        self.version, self.timezone = row.decode().strip().split("\t")

    def close(self, drain_timeout_s: float = 10.0) -> None:
        """Wait for running queries, then close every handle; the last close flushes the data."""
        with self._idle:
            self._closed = True
            self._idle.wait_for(lambda: self._active == 0, timeout=drain_timeout_s)
            handles = list(self._sessions.values())
            self._sessions.clear()
        for handle in handles:
            _close_quietly(handle.conn)
        if self._anchor is not None:
            _close_quietly(self._anchor)
            self._anchor = None

    def execute(self, req: QueryRequest) -> QueryResult:
        with self._borrow(req) as handle:
            try:
                self._prepare(handle, req)
                return self._run(handle, req)
            except RuntimeError as exc:
                raise ClickHouseError.from_engine(exc) from None

    def column_types(self, req: QueryRequest) -> list[str]:
        """The result's column types, from DESCRIBE: the query is analysed, not run again."""
        inner = _TRAILING_FORMAT.sub("", req.sql.strip().rstrip(";"))
        describe = QueryRequest(
            sql=f"DESCRIBE TABLE ({inner})",
            params=req.params,
            settings=req.settings,
            database=req.database,
            session_id=req.session_id,
            session_timeout_s=req.session_timeout_s,
            default_format="JSONCompactEachRow",
        )
        try:
            body = self.execute(describe).body
        except ClickHouseError:
            return []
        return [str(json.loads(line)[1]) for line in body.splitlines() if line]

    @contextlib.contextmanager
    def _borrow(self, req: QueryRequest) -> Iterator[_Handle]:
        with self._lock:
            if self._closed:
                raise ClickHouseError.make(210, "NETWORK_ERROR", "Server is shutting down")
            self._active += 1
        try:
            if req.session_id is None:
                handle = _Handle(conn=self._connect(), persistent=False)
                try:
                    yield handle
                finally:
                    _close_quietly(handle.conn)
                return
            handle = self._session(req)
            try:
                yield handle
            finally:
                handle.last_used = time.monotonic()
                handle.lock.release()
        finally:
            with self._idle:
                self._active -= 1
                self._idle.notify_all()

    def _connect(self) -> Any:
        try:
            return chdb.connect(self._path)
        except RuntimeError as exc:
            raise ClickHouseError.from_engine(exc) from None

    def _session(self, req: QueryRequest) -> _Handle:
        """The session's handle, locked for this request (ClickHouse refuses concurrent use)."""
        assert req.session_id is not None
        expired: list[_Handle] = []
        with self._lock:
            now = time.monotonic()
            for sid, other in list(self._sessions.items()):
                if other.expired(now) and other.lock.acquire(blocking=False):
                    expired.append(self._sessions.pop(sid))
            handle = self._sessions.get(req.session_id)
            if handle is None:
                if req.session_check:
                    raise ClickHouseError.make(
                        372, "SESSION_NOT_FOUND", f"Session {req.session_id} not found"
                    )
                handle = _Handle(conn=self._connect(), persistent=True)
                self._sessions[req.session_id] = handle
            if not handle.lock.acquire(blocking=False):
                raise ClickHouseError.make(
                    373,
                    "SESSION_IS_LOCKED",
                    f"Session {req.session_id} is locked by a concurrent client",
                )
            handle.timeout_s = req.session_timeout_s
        for old in expired:
            _close_quietly(old.conn)
        return handle

    def _prepare(self, handle: _Handle, req: QueryRequest) -> None:
        if req.database and req.database != handle.database:
            handle.conn.query(f"USE {_quote_ident(req.database)}", "TabSeparated")
            handle.database = req.database
        # A SET statement changes the session itself, so it runs without URL overrides on top.
        target = {} if is_set_statement(req.sql) else dict(req.settings)
        restore = [name for name in handle.applied if name not in target]
        change = {k: v for k, v in target.items() if handle.applied.get(k) != v}
        if not restore and not change:
            return
        if handle.persistent:
            self._snapshot(handle, [k for k in change if k not in handle.baseline])
        assignments = [
            f"{name} = {_restore_literal(handle.baseline.get(name))}" for name in restore
        ]
        assignments += [f"{name} = {_quote(value)}" for name, value in change.items()]
        try:
            handle.conn.query("SET " + ", ".join(assignments), "TabSeparated")
        except RuntimeError:
            self._reset_overrides(handle, [*handle.applied, *change])
            raise
        handle.applied = target

    def _snapshot(self, handle: _Handle, names: list[str]) -> None:
        if not names:
            return
        listed = ", ".join(_quote(n) for n in names)
        rows = handle.conn.query(
            f"SELECT name, value, changed FROM system.settings WHERE name IN ({listed})",
            "TSVRaw",
        ).bytes()
        for line in rows.decode().splitlines():
            name, value, changed = line.split("\t")
            handle.baseline[name] = value if changed == "1" else None
        for name in names:
            handle.baseline.setdefault(name, None)

    def _reset_overrides(self, handle: _Handle, names: list[str]) -> None:
        for name in dict.fromkeys(names):
            with contextlib.suppress(RuntimeError):
                literal = _restore_literal(handle.baseline.get(name))
                handle.conn.query(f"SET {name} = {literal}", "TabSeparated")
        handle.applied = {}

    def _run(self, handle: _Handle, req: QueryRequest) -> QueryResult:
        if req.insert is not None:
            inserter = handle.conn.send_insert(req.insert.statement, req.insert.format)
            try:
                if req.data is not None and len(req.data):
                    inserter.append(req.data)
                done = inserter.finish()
            except BaseException:
                with contextlib.suppress(Exception):
                    inserter.cancel()
                raise
            return QueryResult(
                body=b"",
                written_rows=int(done.rows_written),
                written_bytes=int(done.bytes_written),
                elapsed_ns=int(done.elapsed * 1e9),
            )
        res = handle.conn.query(req.sql, req.default_format, params=dict(req.params))
        if is_set_statement(req.sql):
            handle.baseline.clear()
        if is_use_statement(req.sql):
            handle.database = None
        return QueryResult(
            body=res.bytes(),
            read_rows=int(res.rows_read()),
            read_bytes=int(res.bytes_read()),
            written_rows=int(res.rows_written()),
            written_bytes=int(res.bytes_written()),
            elapsed_ns=int(res.elapsed() * 1e9),
        )


def _quote(value: str) -> str:
    # Quoted literals are coerced to the setting's type by ClickHouse; bare ones may not parse.
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _quote_ident(name: str) -> str:
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def _restore_literal(value: str | None) -> str:
    return "DEFAULT" if value is None else _quote(value)


def _close_quietly(conn: Any) -> None:
    with contextlib.suppress(Exception):
        conn.close()
