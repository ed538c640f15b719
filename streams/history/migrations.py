"""Ordered DDL migrations from `infra/clickhouse/NNN_name.sql`, each applied once."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from streams.history.client import connect
from streams.history.settings import ClickHouseSettings

_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    path: Path

    def statements(self, database: str) -> list[str]:
        sql = self.path.read_text().replace("{database}", database)
        return [s.strip() for s in sql.split(";\n") if s.strip().rstrip(";").strip()]


def discover(directory: Path) -> list[Migration]:
    found = []
    for path in sorted(directory.glob("*.sql")):
        match = _NAME.match(path.name)
        if not match:
            raise ValueError(f"migration file {path.name!r} must be named NNN_name.sql")
        found.append(Migration(int(match.group(1)), path))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ValueError(f"duplicate migration versions in {directory}")
    return found


def migrate(settings: ClickHouseSettings) -> list[int]:
    """Apply pending migrations in order; returns the versions applied now."""
    db = settings.database
    with connect(settings, database="default") as client:
        client.command(f"CREATE DATABASE IF NOT EXISTS `{db}`")
        client.command(
            f"CREATE TABLE IF NOT EXISTS `{db}`.schema_migrations "
            "(version UInt32, name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3)) "
            "ENGINE = MergeTree ORDER BY version"
        )
        done = {
            row[0]
            for row in client.query(f"SELECT version FROM `{db}`.schema_migrations").result_rows
        }
        applied = []
        for migration in discover(settings.migrations_dir):
            if migration.version in done:
                continue
            for statement in migration.statements(db):
                client.command(statement)
            client.insert(
                f"`{db}`.schema_migrations",
                [[migration.version, migration.path.name]],
                column_names=["version", "name"],
            )
            applied.append(migration.version)
    return applied
