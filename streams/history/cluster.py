"""The migrations rendered for a ClickHouse cluster (`CENTRALITY_CLICKHOUSE_CLUSTER`).

Each table of the single-node schema becomes two: `<name>_local`, the same columns on a
`Replicated*MergeTree` on every node, and `<name>`, a `Distributed` table over them, so every
reader and writer (sink, dashboards, replay, `history`) keeps using the plain names. The replicas'
Keeper paths are the server's `default_replica_path` and `default_replica_name` (by default
`/clickhouse/tables/{uuid}/{shard}` and `{replica}`), so no path is invented here.

Rows are sharded by a hash of the table's sort key: duplicates (a batch the sink wrote twice) have
equal sort keys, so they land on one shard, where `ReplacingMergeTree` collapses them.
Materialized views run where a block is inserted, on the shard's `_local` tables; plain views read
the `Distributed` tables. Every statement carries `ON CLUSTER`. A statement of a shape not listed
below is refused rather than guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

LOCAL = "_local"

_COMMENTS = re.compile(r"\A(?:\s*--[^\n]*\n)*\s*")
_REF = r"`[^`]+`\.\w+"
_CREATE_TABLE = re.compile(
    rf"CREATE TABLE IF NOT EXISTS (?P<ref>{_REF})\s*(?P<columns>\(.*?\n\))\s*"
    r"ENGINE = (?P<engine>\w*MergeTree)(?P<rest>.*)",
    re.DOTALL,
)
_CREATE_MV = re.compile(
    rf"CREATE MATERIALIZED VIEW IF NOT EXISTS (?P<ref>{_REF}) TO (?P<to>{_REF}) AS(?P<select>.*)",
    re.DOTALL,
)
_CREATE_VIEW = re.compile(rf"CREATE VIEW IF NOT EXISTS (?P<ref>{_REF}) AS(?P<select>.*)", re.DOTALL)
_DROP = re.compile(rf"DROP (?P<kind>VIEW|TABLE) IF EXISTS (?P<ref>{_REF})")
_ALTER = re.compile(rf"ALTER TABLE (?P<ref>{_REF})(?P<ops>.*)", re.DOTALL)
_INSERT = re.compile(rf"INSERT INTO {_REF}\b.*", re.DOTALL)
# A sort key of plain columns: `(a, b, c)` or `a` (an expression is refused, not guessed at).
_ORDER_BY = re.compile(r"\bORDER BY (?P<key>\([\w\s,]*\)|\w+\b(?!\s*\())")
# Column operations change a table's structure: the Distributed table must follow its locals.
_STRUCTURE_OPS = re.compile(r"(ADD|MODIFY|DROP|RENAME|COMMENT) COLUMN\b")


def sharded_tables(statements: Iterable[str]) -> frozenset[str]:
    """Names of the MergeTree tables the single-node statements create (sharded on a cluster)."""
    names = set()
    for statement in statements:
        if match := _CREATE_TABLE.fullmatch(_strip_comments(statement)):
            names.add(_name(match["ref"]))
    return frozenset(names)


def on_clause(cluster: str | None) -> str:
    return "" if cluster is None else f" ON CLUSTER `{cluster}`"


def ledger_engine(cluster: str | None, database: str) -> str:
    """The engine of `schema_migrations`."""
    if cluster is None:
        return "MergeTree"
    # One replica set over the whole cluster, every shard included: whichever node `up` reaches
    # next knows what was applied.
    path = f"/clickhouse/centrality/{database}/schema_migrations"
    return f"ReplicatedMergeTree('{path}', '{{shard}}-{{replica}}')"


def on_cluster(statement: str, cluster: str, sharded: frozenset[str]) -> list[str]:
    """One single-node statement as the statements that do the same on `cluster`."""
    body = _strip_comments(statement)
    on = on_clause(cluster)
    if match := _CREATE_TABLE.fullmatch(body):
        ref, local = match["ref"], _local(match["ref"])
        database, _, _ = ref.partition(".")
        key = _sharding_key(match["rest"], ref)
        return [
            f"CREATE TABLE IF NOT EXISTS {local}{on}\n{match['columns']}\n"
            f"ENGINE = Replicated{match['engine']}{match['rest']}",
            f"CREATE TABLE IF NOT EXISTS {ref}{on} AS {local}\n"
            f"ENGINE = Distributed('{cluster}', '{database.strip('`')}', "
            f"'{_name(local)}', cityHash64{key})",
        ]
    if match := _CREATE_MV.fullmatch(body):
        select = re.sub(_REF, lambda m: _local_if_sharded(m[0], sharded), match["select"])
        return [
            f"CREATE MATERIALIZED VIEW IF NOT EXISTS {match['ref']}{on} "
            f"TO {_local_if_sharded(match['to'], sharded)} AS{select}"
        ]
    if match := _CREATE_VIEW.fullmatch(body):
        return [f"CREATE VIEW IF NOT EXISTS {match['ref']}{on} AS{match['select']}"]
    if match := _DROP.fullmatch(body):
        ref = match["ref"]
        drops = [f"DROP {match['kind']} IF EXISTS {ref}{on}"]
        if match["kind"] == "TABLE" and _name(ref) in sharded:
            drops.append(f"DROP TABLE IF EXISTS {_local(ref)}{on}")
        return drops
    if match := _ALTER.fullmatch(body):
        ref, ops = match["ref"], match["ops"]
        if _name(ref) not in sharded:
            raise ValueError(f"cannot render for a cluster, not a table of ours: {body[:200]}")
        kinds = {bool(_STRUCTURE_OPS.match(op.strip())) for op in _top_level_split(ops)}
        if kinds == {False}:  # TTL, MATERIALIZE, settings: the data lives in the locals only
            return [f"ALTER TABLE {_local(ref)}{on}{ops}"]
        if kinds == {True}:
            return [f"ALTER TABLE {_local(ref)}{on}{ops}", f"ALTER TABLE {ref}{on}{ops}"]
        raise ValueError(f"cannot render for a cluster, column and data changes mixed: {body}")
    if _INSERT.fullmatch(body):
        # Run once, on the node the migration talks to: Distributed to Distributed.
        return [body]
    raise ValueError(f"cannot render this statement for a cluster: {body[:200]}")


def _strip_comments(statement: str) -> str:
    return _COMMENTS.sub("", statement, count=1)


def _name(ref: str) -> str:
    return ref.rpartition(".")[2]


def _local(ref: str) -> str:
    return ref + LOCAL


def _local_if_sharded(ref: str, sharded: frozenset[str]) -> str:
    return _local(ref) if _name(ref) in sharded else ref


def _sharding_key(rest: str, ref: str) -> str:
    match = _ORDER_BY.search(rest)
    if match is None:
        raise ValueError(f"cannot shard {ref} on a cluster: no ORDER BY of plain columns")
    key = match["key"]
    return key if key.startswith("(") else f"({key})"


def _top_level_split(text: str) -> list[str]:
    """`text` split at the commas outside parentheses and quotes (ALTER's operations)."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, char in enumerate(text):
        if char == "'":
            quoted = not quoted
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
        elif not quoted and depth == 0 and char == ",":
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts
