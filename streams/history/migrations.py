"""Ordered DDL migrations from `ddl/NNN_name.sql` (package data), each applied once, then the TTLs.

A migration may use `{database}`, `{ttl_days}` and `{samples_ttl_days}`. It is written for one
server; with `CENTRALITY_CLICKHOUSE_CLUSTER` set it is rendered for that cluster (see
`streams.history.cluster`). Because a migration runs once, a later change of the TTL settings is
applied by `ALTER TABLE … MODIFY TTL` at every `migrate()` (by `centrality up` and by the sink at
start), only on tables whose TTL differs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streams.history.client import connect
from streams.history.cluster import LOCAL, ledger_engine, on_clause, on_cluster, sharded_tables
from streams.history.settings import ClickHouseSettings

_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")
_TTL = re.compile(r"\bTTL (.+?) \+ toIntervalDay\((\d+)\)")

# High-volume tables keep `samples_ttl_days`; every other table with a TTL keeps `ttl_days`.
SAMPLE_TABLES = frozenset({"gpu_samples", "log_lines"})


@dataclass(frozen=True)
class Migration:
    version: int
    path: Path

    def statements(self, settings: ClickHouseSettings) -> list[str]:
        sql = (
            self.path.read_text()
            .replace("{database}", settings.database)
            .replace("{ttl_days}", str(settings.ttl_days))
            .replace("{samples_ttl_days}", str(settings.samples_ttl_days))
        )
        return [s.strip() for s in sql.split(";\n") if _code(s)]


def _code(statement: str) -> bool:
    """False for a chunk of only comments and blanks."""
    return any(
        line.strip() and not line.strip().startswith("--") for line in statement.splitlines()
    )


class MigrationsMissing(FileNotFoundError):
    """No migrations where they should be: a broken install or a wrong setting, never "none
    pending" (a database left without its tables would only fail later, at the first insert)."""


def discover(directory: Path) -> list[Migration]:
    found = []
    for path in sorted(directory.glob("*.sql")):
        match = _NAME.match(path.name)
        if not match:
            raise ValueError(f"migration file {path.name!r} must be named NNN_name.sql")
        found.append(Migration(int(match.group(1)), path))
    if not found:
        raise MigrationsMissing(
            f"no ClickHouse migrations (NNN_name.sql) in {directory}: "
            "check CENTRALITY_CLICKHOUSE_MIGRATIONS_DIR, or reinstall centrality"
        )
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ValueError(f"duplicate migration versions in {directory}")
    return found


def plan(settings: ClickHouseSettings) -> list[tuple[Migration, list[str]]]:
    """Every migration with the statements that apply it, for one server or for the cluster."""
    migrations = discover(settings.migrations_dir)
    written = [(m, m.statements(settings)) for m in migrations]
    if settings.cluster is None:
        return written
    # Every migration's tables, not only the pending ones': a later view reads an earlier table.
    sharded = sharded_tables(s for _, statements in written for s in statements)
    return [
        (m, [r for s in statements for r in on_cluster(s, settings.cluster, sharded)])
        for m, statements in written
    ]


def migrate(settings: ClickHouseSettings) -> list[int]:
    """Apply pending migrations in order, then the TTL settings; returns the versions applied."""
    steps = plan(settings)
    db = settings.database
    on = on_clause(settings.cluster)
    with connect(settings, database="default") as client:
        client.command(f"CREATE DATABASE IF NOT EXISTS `{db}`{on}")
        client.command(
            f"CREATE TABLE IF NOT EXISTS `{db}`.schema_migrations{on} "
            "(version UInt32, name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3)) "
            f"ENGINE = {ledger_engine(settings.cluster, db)} ORDER BY version"
        )
        done = {
            row[0]
            for row in client.query(f"SELECT version FROM `{db}`.schema_migrations").result_rows
        }
        applied = []
        for migration, statements in steps:
            if migration.version in done:
                continue
            for statement in statements:
                client.command(statement)
            client.insert(
                f"`{db}`.schema_migrations",
                [[migration.version, migration.path.name]],
                column_names=["version", "name"],
            )
            applied.append(migration.version)
        apply_ttls(client, settings)
    return applied


def apply_ttls(client: Any, settings: ClickHouseSettings) -> list[str]:
    """Bring every table's TTL to the configured days; returns the tables altered."""
    rows = client.query(
        "SELECT name, engine_full FROM system.tables WHERE database = {db:String}",
        parameters={"db": settings.database},
    ).result_rows
    altered = []
    for name, engine in rows:
        match = _TTL.search(engine)
        if not match:
            continue
        table = name.removesuffix(LOCAL) if settings.cluster else name
        days = settings.samples_ttl_days if table in SAMPLE_TABLES else settings.ttl_days
        if int(match.group(2)) == days:
            continue
        client.command(
            f"ALTER TABLE `{settings.database}`.`{name}`{on_clause(settings.cluster)} "
            f"MODIFY TTL {match.group(1)} + INTERVAL {days} DAY"
        )
        altered.append(name)
    return altered
