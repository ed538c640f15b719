"""ClickHouse reachable, its history migrated, and its clock beside ours."""

from __future__ import annotations

import time
from collections.abc import Iterator

from centrality.doctor import Finding, check
from centrality.errors import START_HINT
from streams.history.client import connect
from streams.history.migrations import discover
from streams.history.settings import ClickHouseSettings

# Windows, cooldowns and replay order by event time: a skewed clock moves events between windows.
CLOCK_WARN_S = 1.0
CLOCK_FAIL_S = 30.0


@check("clickhouse")
def clickhouse() -> Iterator[Finding]:
    settings = ClickHouseSettings()
    with connect(settings, database="default") as client:
        version = client.command("SELECT version()")
    yield Finding("clickhouse", "ok", f"{settings.url}: ClickHouse {version}")


@check("migrations", needs="clickhouse")
def migrations() -> Iterator[Finding]:
    settings = ClickHouseSettings()
    db = settings.database
    with connect(settings, database="default") as client:
        migrated = client.command(f"EXISTS TABLE `{db}`.schema_migrations") == 1
        done = (
            {
                r[0]
                for r in client.query(f"SELECT version FROM `{db}`.schema_migrations").result_rows
            }
            if migrated
            else set()
        )
    pending = [m.path.name for m in discover(settings.migrations_dir) if m.version not in done]
    if pending:
        yield Finding(
            "migrations",
            "fail",
            f"database {db}: {len(pending)} migration(s) pending: {', '.join(pending)}",
            f"{START_HINT}: it applies them (the sink does too when it starts)",
        )
    else:
        yield Finding("migrations", "ok", f"database {db}: all {len(done)} migrations applied")


@check("clock", needs="clickhouse")
def clock() -> Iterator[Finding]:
    settings = ClickHouseSettings()
    with connect(settings, database="default") as client:
        before = time.time()
        server = client.query("SELECT toUnixTimestamp64Micro(now64(6))").result_rows[0][0]
        after = time.time()
    skew_s = int(server) / 1e6 - (before + after) / 2
    direction = "behind" if skew_s > 0 else "ahead of"
    detail = (
        f"this host is {abs(skew_s):.3f} s {direction} ClickHouse at {settings.url} "
        f"(±{(after - before) / 2:.3f} s)"
    )
    if abs(skew_s) <= CLOCK_WARN_S:
        yield Finding("clock", "ok", detail)
        return
    yield Finding(
        "clock",
        "warn" if abs(skew_s) <= CLOCK_FAIL_S else "fail",
        detail,
        "synchronise the clocks (chrony or systemd-timesyncd) on this host and the servers",
    )
