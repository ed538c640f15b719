"""Migrations for a ClickHouse cluster (`CENTRALITY_CLICKHOUSE_CLUSTER`): every statement
ClickHouse's own parser (chDB's `formatQuery`, which needs no cluster) accepts, the shape each
becomes, and the single-node default left as written."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

from streams.history.cluster import on_cluster, sharded_tables
from streams.history.migrations import MigrationsMissing, discover, plan
from streams.history.settings import DDL_DIR, ClickHouseSettings
from streams.history.sink import HistorySink

SINGLE = ClickHouseSettings(database="db1")
CLUSTER = SINGLE.model_copy(update={"cluster": "prod"})
# Formats the statements of stdin (a JSON list) with ClickHouse's parser, in one query; a syntax
# error fails it, naming the statement.
_FORMAT = r"""
import sys, chdb, orjson
literals = [
    "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
    for s in orjson.loads(sys.stdin.buffer.read())
]
query = f"SELECT formatQuery(s) FROM (SELECT arrayJoin([{', '.join(literals)}]) AS s)"
print(chdb.query(query, "JSONCompactColumns"))
"""


def formatted(statements: list[str]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _FORMAT],
        input=orjson.dumps(statements),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    [column] = orjson.loads(done.stdout)
    return list(column)


def cluster_statements() -> list[str]:
    return [s for _, statements in plan(CLUSTER) for s in statements]


def test_the_single_node_default_is_the_migrations_as_written() -> None:
    assert [(m, s) for m, s in plan(SINGLE)] == [
        (m, m.statements(SINGLE)) for m in discover(DDL_DIR)
    ]
    text = "\n".join(s for _, statements in plan(SINGLE) for s in statements)
    assert not re.search(r"ON CLUSTER|Replicated|Distributed|_local\b", text)


def test_each_table_becomes_replicated_locals_behind_a_distributed_table() -> None:
    single = [s for _, statements in plan(SINGLE) for s in statements]
    tables = sharded_tables(single)
    assert {"events", "dead_letters", "job_events", "gpu_samples", "action_results"} <= tables
    statements = cluster_statements()
    text = "\n".join(statements)
    # No table is left on a plain (unreplicated) MergeTree engine.
    assert not re.search(r"ENGINE = (?!Replicated)\w*MergeTree", text)
    for table in tables:
        local = f"`db1`.{table}_local ON CLUSTER `prod`"
        assert re.search(
            rf"CREATE TABLE IF NOT EXISTS {local}\n\(.*?\)\nENGINE = Replicated\w+MergeTree",
            text,
            re.DOTALL,
        ), table
        assert (
            f"CREATE TABLE IF NOT EXISTS `db1`.{table} ON CLUSTER `prod` AS `db1`.{table}_local\n"
            f"ENGINE = Distributed('prod', 'db1', '{table}_local', cityHash64("
        ) in text, table


def test_materialized_views_read_and_write_the_shards_own_tables() -> None:
    views = [s for s in cluster_statements() if s.startswith("CREATE MATERIALIZED VIEW")]
    assert len(views) >= 10
    tables = sharded_tables(s for _, statements in plan(SINGLE) for s in statements)
    for view in views:
        for name in re.findall(r"`db1`\.(\w+)", view.split(" AS", 1)[1]):
            assert name.removesuffix("_local") in tables and name.endswith("_local"), view
        assert re.search(r" TO `db1`\.\w+_local AS", view), view


def test_column_changes_follow_on_the_distributed_table_data_changes_do_not() -> None:
    sharded = frozenset({"t"})
    assert on_cluster(
        "ALTER TABLE `d`.t ADD COLUMN x DateTime64(3, 'UTC') DEFAULT now64(3)", "c", sharded
    ) == [
        "ALTER TABLE `d`.t_local ON CLUSTER `c` ADD COLUMN x DateTime64(3, 'UTC') DEFAULT now64(3)",
        "ALTER TABLE `d`.t ON CLUSTER `c` ADD COLUMN x DateTime64(3, 'UTC') DEFAULT now64(3)",
    ]
    assert on_cluster("ALTER TABLE `d`.t MATERIALIZE COLUMN x", "c", sharded) == [
        "ALTER TABLE `d`.t_local ON CLUSTER `c` MATERIALIZE COLUMN x"
    ]
    with pytest.raises(ValueError, match="mixed"):
        on_cluster(
            "ALTER TABLE `d`.t ADD COLUMN y UInt8, MODIFY TTL x + INTERVAL 1 DAY", "c", sharded
        )
    # Dropping a sharded table drops its locals too; a view is one object.
    assert on_cluster("DROP TABLE IF EXISTS `d`.t", "c", sharded) == [
        "DROP TABLE IF EXISTS `d`.t ON CLUSTER `c`",
        "DROP TABLE IF EXISTS `d`.t_local ON CLUSTER `c`",
    ]
    assert on_cluster("DROP VIEW IF EXISTS `d`.v", "c", sharded) == [
        "DROP VIEW IF EXISTS `d`.v ON CLUSTER `c`"
    ]


def test_a_statement_of_another_shape_is_refused_not_guessed() -> None:
    with pytest.raises(ValueError, match="cannot render"):
        on_cluster("CREATE TABLE IF NOT EXISTS `d`.l\n(a UInt8\n)\nENGINE = Log", "c", frozenset())
    with pytest.raises(ValueError, match="cannot render"):
        on_cluster("TRUNCATE TABLE `d`.t", "c", frozenset({"t"}))
    # Rows are sharded by the sort key's columns; an expression there is not guessed at.
    [_, distributed] = on_cluster(
        "CREATE TABLE IF NOT EXISTS `d`.t\n(a UInt8\n)\nENGINE = MergeTree ORDER BY a",
        "c",
        frozenset(),
    )
    assert distributed.endswith("ENGINE = Distributed('c', 'd', 't_local', cityHash64(a))")
    for key in ("tuple()", "(a, toDate(b))"):
        with pytest.raises(ValueError, match="cannot shard"):
            on_cluster(
                f"CREATE TABLE IF NOT EXISTS `d`.t\n(a UInt8\n)\nENGINE = MergeTree ORDER BY {key}",
                "c",
                frozenset(),
            )


def test_the_cluster_name_is_an_identifier() -> None:
    with pytest.raises(ValidationError):
        ClickHouseSettings(cluster="prod` SETTINGS x=1 --")


def test_a_missing_or_empty_migrations_directory_is_an_error(tmp_path: Path) -> None:
    for directory in (tmp_path / "absent", tmp_path):
        with pytest.raises(MigrationsMissing, match="no ClickHouse migrations"):
            plan(SINGLE.model_copy(update={"migrations_dir": directory}))


async def test_the_sink_refuses_to_start_without_migrations(tmp_path: Path) -> None:
    """Not retried as if ClickHouse were down: the sink stops at once, saying why."""
    sink = HistorySink(clickhouse=SINGLE.model_copy(update={"migrations_dir": tmp_path}))
    with pytest.raises(MigrationsMissing):
        await asyncio.wait_for(sink.run(), 10)
