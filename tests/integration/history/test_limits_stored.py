"""Everything the contract accepts is stored and read back unchanged, at every limit, through the
history writer into the real ClickHouse; what it refuses is a `limit` dead letter, never a row
lost without a trace."""

from __future__ import annotations

import json
import shutil
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from schemas import limits
from schemas.codec import encode
from schemas.envelope import Event
from schemas.events import (
    ActionSucceeded,
    GpuSampled,
    GpuXidObserved,
    JobExited,
    LogLinesObserved,
    QuarantineNodes,
)
from schemas.placement import Placement
from streams.history.client import connect
from streams.history.migrations import migrate
from streams.history.query import events_by_id
from streams.history.rows import Record
from streams.history.settings import DDL_DIR, ClickHouseSettings
from streams.history.writer import insert, rows_of

DEADLETTER = "t.deadletter"
# The newest time accepted: a little inside the skew, so it is still inside when decoded.
NEWEST = datetime.now(UTC) + limits.max_future_skew() - timedelta(minutes=10)
UNICODE = "ü漢🚀"


def text(n: int) -> str:
    """`n` characters, mixing one-, two-, three- and four-byte UTF-8."""
    return ("a" + UNICODE) * (n // 4) + "a" * (n % 4)


def env(subject: str, at: datetime = limits.MIN_TIME, **extra: Any) -> dict[str, Any]:
    return {
        "source": text(limits.SOURCE),
        "cluster": text(limits.CLUSTER),
        "subject": subject,
        "occurred_at": at,
        "observed_at": NEWEST,
        **extra,
    }


def at_the_limits() -> list[Event]:
    job = text(limits.SUBJECT)
    node = text(limits.NODE_NAME)
    return [
        JobExited(
            **env(job),
            payload={
                "state": "FAILED",
                "raw_state": text(limits.NAME),
                "exit_code": limits.INT64_MAX,
                "signal": 255,
                "reason": text(limits.TEXT),
                "attempt": limits.UINT32_MAX,
                "nodes": [node] * 8 + [f"gpu-node-{i:05d}" for i in range(limits.MAX_NODES - 8)],
                "gpus": limits.UINT32_MAX,
            },
        ),
        JobExited(
            **env(job, NEWEST),
            payload={"state": "FAILED", "exit_code": limits.INT64_MIN, "attempt": 1},
        ),
        LogLinesObserved(
            **env(job, NEWEST),
            payload={
                "path": text(limits.TEXT),
                "lines": [
                    {"line": text(limits.LOG_LINE), "at": limits.MIN_TIME, "node": node},
                    {"line": UNICODE, "at": NEWEST, "rank": limits.INT32_MAX, "stream": "stderr"},
                    *({"line": f"step {i}"} for i in range(limits.LOG_LINES - 2)),
                ],
            },
        ),
        GpuSampled(
            **env(node),
            payload={
                "gpu": limits.GPUS_PER_NODE - 1,
                "uuid": text(limits.WORD),
                "utilization_pct": 0.1,
                "memory_used_bytes": limits.INT64_MAX,
                "temperature_c": -273.15,
                "power_w": 1e300,
                "nvlink_links_down": limits.UINT32_MAX,
                "throttle_reasons": [text(limits.WORD)] * limits.SMALL_LIST,
            },
        ),
        GpuXidObserved(
            **env(node, NEWEST),
            payload={"gpu": 0, "xid": limits.UINT32_MAX, "message": text(limits.TEXT)},
        ),
        QuarantineNodes(
            **env(job),
            payload={
                "rule": text(limits.NAME),
                "window": text(limits.NAME),
                "reason": text(limits.TEXT),
                "caused_by": [uuid.uuid4() for _ in range(limits.CAUSES)],
                "nodes": [node] * 1000,
            },
        ),
        ActionSucceeded(
            **env(job, NEWEST),
            payload={
                "trigger_id": uuid.uuid4(),
                "trigger_type": text(limits.NAME),
                "action": text(limits.NAME),
                "attempt": limits.UINT32_MAX,
                "detail": {
                    text(limits.MAP_KEY - 2) + f"{i:02d}": {"v": text(900)}
                    for i in range(limits.MAP_ENTRIES)
                },
            },
        ),
    ]


def write(settings: ClickHouseSettings, values: list[tuple[str, bytes]]) -> Any:
    records = [Record(f"t.{t}", 0, offset, b"k", v) for offset, (t, v) in enumerate(values)]
    rows = rows_of(records, DEADLETTER, Placement({}))  # limits, not placement, are tested
    with connect(settings) as client:
        insert(client, rows, f"limits-{uuid.uuid4()}", 10_000)
        # Merges apply TTLs: an event-time TTL would drop the year-2000 rows here at the latest.
        for table in ("events", "job_events", "log_lines", "gpu_samples", "node_events"):
            client.command(f"OPTIMIZE TABLE {table} FINAL")
    return rows


def stored(settings: ClickHouseSettings) -> dict[uuid.UUID, Event]:
    """Every event of the database, read back the way replay and the CLI read history."""
    with connect(settings) as client:
        ids = [r[0] for r in client.query("SELECT toString(event_id) FROM events").result_rows]
    # In chunks: from about 90 ids on, the local server answers a syntax error (the query
    # parameters then travel another way); reported, not this test's subject.
    chunks = [ids[i : i + 50] for i in range(0, len(ids), 50)]
    return {e.event_id: e for chunk in chunks for e in events_by_id(settings, chunk).values()}


def test_events_at_every_limit_are_stored_and_read_back_equal(
    clickhouse_settings: ClickHouseSettings,
) -> None:
    events = at_the_limits()
    rows = write(clickhouse_settings, [(e.topic, encode(e)) for e in events])
    assert not rows.rejected
    assert stored(clickhouse_settings) == {e.event_id: e for e in events}

    exited, lowest, lines, sample, xid, quarantine, action = events
    with connect(clickhouse_settings) as client:
        jobs = client.query(
            "SELECT event_id, exit_code, attempt, gpus, length(nodes), reason, signal "
            "FROM job_events FINAL ORDER BY exit_code"
        ).result_rows
        assert jobs == [
            (lowest.event_id, limits.INT64_MIN, 1, 0, 0, "", ""),
            (
                exited.event_id,
                limits.INT64_MAX,
                limits.UINT32_MAX,
                limits.UINT32_MAX,
                limits.MAX_NODES,
                text(limits.TEXT),
                "255",
            ),
        ]
        logs = client.query(
            "SELECT line, at, node, rank FROM log_lines FINAL WHERE line_no <= 2 ORDER BY line_no"
        ).result_rows
        assert [(r[0], r[1].replace(tzinfo=UTC), r[2], r[3]) for r in logs] == [
            (text(limits.LOG_LINE), limits.MIN_TIME, text(limits.NODE_NAME), None),
            (UNICODE, NEWEST, "", limits.INT32_MAX),
        ]
        assert client.query("SELECT count() FROM log_lines FINAL").result_rows == [
            (limits.LOG_LINES,)
        ]
        gpu = client.query(
            "SELECT gpu, utilization_pct, memory_used_bytes, temperature_c, power_w, "
            "nvlink_links_down, length(throttle_reasons) FROM gpu_samples FINAL"
        ).result_rows
        assert gpu == [
            (limits.GPUS_PER_NODE - 1, 0.1, limits.INT64_MAX, -273.15, 1e300, limits.UINT32_MAX, 64)
        ]
        assert client.query("SELECT xid, message FROM node_events FINAL").result_rows == [
            (limits.UINT32_MAX, text(limits.TEXT))
        ]
        assert client.query("SELECT length(caused_by) FROM triggers FINAL").result_rows == [
            (limits.CAUSES,)
        ]
        assert client.query("SELECT attempt FROM action_results FINAL").result_rows == [
            (limits.UINT32_MAX,)
        ]
    assert sample.payload.power_w == 1e300 and xid.payload.xid == limits.UINT32_MAX
    assert quarantine.payload.nodes and action.payload.detail and lines.payload.lines


def hostile(**change: Any) -> bytes:
    """A JobExited as a producer in another language might write it (stdlib JSON: integers of
    any size), with one field changed."""
    doc: dict[str, Any] = {
        "event_id": str(uuid.uuid4()),
        "type": "JobExited",
        "source": "foreign",
        "cluster": "c",
        "subject": "slurm/c/1",
        "occurred_at": "2026-01-01T00:00:00Z",
        "observed_at": "2026-01-01T00:00:00Z",
        "payload": {"state": "FAILED"},
    }
    for key, value in change.items():
        if key in doc["payload"] or key in ("exit_code", "nodes"):
            doc["payload"][key] = value
        else:
            doc[key] = value
    return json.dumps(doc).encode()


def test_the_reported_cases_are_limits_or_stored_exactly(
    clickhouse_settings: ClickHouseSettings,
) -> None:
    refused = {
        "year 9999": hostile(occurred_at="9999-12-31T23:59:59Z"),
        "year 0001": hostile(occurred_at="0001-01-01T00:00:00Z"),
        "leap second": hostile(occurred_at="2016-12-31T23:59:60Z"),
        "50,000 nodes": hostile(nodes=[f"n{i}" for i in range(50_000)]),
        "500,000-character subject": hostile(subject="j" * 500_000),
        "exit code past int64": hostile(exit_code=2**64),
    }
    kept = hostile(exit_code=2**40)
    rows = write(clickhouse_settings, [("jobs", v) for v in (*refused.values(), kept)])
    assert [(d.reason, d.offset) for d in rows.rejected] == [
        ("limit", offset) for offset in range(len(refused))
    ]
    assert [d.detail.split(": ")[1] for d in rows.rejected] == [
        "occurred_at",
        "occurred_at",
        "occurred_at",
        "payload.nodes",
        "subject",
        "payload.exit_code",
    ]
    with connect(clickhouse_settings) as client:
        assert client.query(
            "SELECT reason, count() FROM dead_letters GROUP BY reason"
        ).result_rows == [("limit", len(refused))]
        assert client.query("SELECT exit_code FROM job_events FINAL").result_rows == [(2**40,)]
    [event] = stored(clickhouse_settings).values()
    assert isinstance(event, JobExited) and event.payload.exit_code == 2**40


def test_existing_rows_survive_the_migration_and_keep_a_retention(
    clickhouse_settings: ClickHouseSettings, tmp_path: Path
) -> None:
    """A database made before 005 keeps its rows; they count their retention from the
    migration, new rows from their insert, and the TTL setting still applies to both."""
    old = clickhouse_settings.model_copy(
        update={"database": f"{clickhouse_settings.database}_old", "migrations_dir": tmp_path}
    )
    for path in sorted(DDL_DIR.glob("00[1-4]_*.sql")):
        shutil.copy(path, tmp_path)
    migrate(old)
    try:
        before = exited_at(datetime.now(UTC) - timedelta(days=1), exit_code=7)
        write(old, [("jobs", encode(before))])
        later = sorted(int(p.name[:3]) for p in DDL_DIR.glob("*.sql") if int(p.name[:3]) > 4)
        assert migrate(clickhouse_settings.model_copy(update={"database": old.database})) == later
        assert later[0] == 5
        after = exited_at(limits.MIN_TIME, exit_code=2**40)
        write(old, [("jobs", encode(after))])
        with connect(old) as client:
            rows = client.query(
                "SELECT exit_code, inserted_at > now64(3) - INTERVAL 1 HOUR "
                "FROM job_events FINAL ORDER BY exit_code"
            ).result_rows
            assert rows == [(7, True), (2**40, True)]
            engines = dict(
                client.query(
                    "SELECT name, engine_full FROM system.tables WHERE database = {db:String}",
                    parameters={"db": old.database},
                ).result_rows
            )
        for table in ("events", "dead_letters", "job_events", "log_lines", "gpu_samples"):
            assert "TTL toDateTime(inserted_at) + toIntervalDay(" in engines[table], table
        assert set(stored(old)) == {before.event_id, after.event_id}
    finally:
        with connect(old, database="default") as client:
            client.command(f"DROP DATABASE IF EXISTS `{old.database}`")


def exited_at(at: datetime, exit_code: int) -> JobExited:
    return JobExited(
        source="s",
        cluster="c",
        subject="slurm/c/9",
        occurred_at=at,
        payload={"state": "FAILED", "exit_code": exit_code},
    )


def test_one_batch_spanning_many_days_is_stored(clickhouse_settings: ClickHouseSettings) -> None:
    """Tables are partitioned by event day: a batch of events from many days (a replay, a late
    producer, or someone probing the time range) must not fail the insert (ClickHouse refuses
    more than 100 partitions per insert by default), or the sink would be stuck on it."""
    start = datetime.now(UTC) - timedelta(days=400)
    events = [exited_at(start + timedelta(days=d), exit_code=d) for d in range(300)]
    rows = write(clickhouse_settings, [("jobs", encode(e)) for e in events])
    assert not rows.rejected
    assert set(stored(clickhouse_settings)) == {e.event_id for e in events}
    with connect(clickhouse_settings) as client:
        assert client.query("SELECT count() FROM job_events FINAL").result_rows == [(300,)]
