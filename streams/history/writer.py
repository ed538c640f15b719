"""One batch of records → validated rows → ClickHouse: the work of the sink's insert processes.

Decoding every event with the contract is the sink's largest cost, and it holds the interpreter
lock like clickhouse-connect's row serialization does; done in several processes it overlaps
with the other batches' decoding and with the server's work. Only the raw records travel to a
process and only a count and the sink's own dead letters travel back: rows never cross.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from schemas.deadletter import DeadLetter
from schemas.placement import Placement
from schemas.registry import build_decoders
from schemas.runtime.logs import configure_logging
from schemas.runtime.malloc import map_large_blocks
from schemas.runtime.outages import CLICKHOUSE_LOGGERS
from streams.history.client import connect
from streams.history.rows import DEAD_LETTER_COLUMNS, EVENT_COLUMNS, Record, Rows, add_record
from streams.history.settings import ClickHouseSettings

_settings: ClickHouseSettings | None = None
_client: Any = None


_TOPIC, _TYPE = EVENT_COLUMNS.index("topic"), EVENT_COLUMNS.index("type")
# clickhouse-connect asks, at every insert, whether the rows are a pandas DataFrame or a numpy
# array, and imports pandas (numpy, pyarrow with it) to ask: ~80 MB resident in each insert
# process, for rows that are lists of Python objects. Blocked in these processes alone, they read
# as not installed, which clickhouse-connect supports (they are its optional extras).
NOT_IMPORTED = ("pandas", "numpy", "pyarrow", "polars")


@dataclass(frozen=True)
class Written:
    rows: int
    rejected: list[DeadLetter]
    by_type: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Event rows per (topic, type), for `centrality_events_in`."""


def start(settings: ClickHouseSettings, parent_pid: int, mmap_threshold_bytes: int = 0) -> None:
    """Process initializer. A sink killed with SIGKILL cannot stop its pool: exit with it."""
    global _settings
    _settings = settings
    map_large_blocks(mmap_threshold_bytes)
    for name in NOT_IMPORTED:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # None: ImportError
    configure_logging()  # a spawned process starts with nothing configured
    build_decoders()  # before the first batch, not within it (schemas.registry)
    # A failed insert goes back to the sink, which says it (or counts it while ClickHouse is
    # away: schemas.runtime.outages); the client's own warnings would say it again at every retry.
    for name in CLICKHOUSE_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)

    def orphaned() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=orphaned, name="parent-watch", daemon=True).start()


def ready() -> None:
    """Submitted once per process at start, so the first batch does not wait for the process to
    start and import (the pool starts its processes as work comes)."""


def write_batch(
    records: list[Record], token: str, deadletter_topic: str, placement: Placement, max_rows: int
) -> Written:
    global _client
    # This process's own copy of the batch (the sink keeps its own for a retry): let each
    # record go once its rows are made, so the raw batch and its rows are never resident at once.
    rows = rows_of(records, deadletter_topic, placement, consume=True)
    try:
        if _client is None:
            assert _settings is not None, "write_batch runs in a process started by start()"
            _client = connect(_settings)
        insert(_client, rows, token, max_rows)
    except Exception:
        # After an outage the pooled connections are dead: the retry opens fresh ones.
        if _client is not None:
            _client.close()
            _client = None
        raise
    by_type = Counter((row[_TOPIC], row[_TYPE]) for row in rows.events)
    by_type[(deadletter_topic, "DeadLetter")] += len(rows.dead_letters)
    return Written(len(rows), rows.rejected, by_type)


def rows_of(
    records: list[Record], deadletter_topic: str, placement: Placement, *, consume: bool = False
) -> Rows:
    """Rows in offset order per partition, whatever order the fetches interleaved partitions in:
    a batch re-read after a crash must split into the same inserts, or a token would name
    different rows than the first time and the server would drop them as a duplicate.
    `consume`: `records` is emptied on the way, each record freed as soon as it is decoded."""
    pending = records if consume else list(records)
    pending.sort(reverse=True)  # popped from the end: oldest first
    rows = Rows()
    while pending:
        add_record(rows, pending.pop(), deadletter_topic, placement)
    return rows


# Tables are partitioned by day, and ClickHouse refuses an insert touching more than 100
# partitions by default (the local server dropped such a block without an error): one batch of a
# replay or a late producer may span any of the days the contract accepts.
_ANY_DAYS = {"max_partitions_per_insert_block": 0}


def insert(client: Any, rows: Rows, token: str, max_rows: int) -> None:
    """Inserts of at most `max_rows`, each with a token of its own: the same records always give
    the same inserts and tokens, so a retried batch is dropped by the server, part for part."""
    for start_row in range(0, len(rows.events), max_rows):
        client.insert(
            "events",
            rows.events[start_row : start_row + max_rows],
            column_names=EVENT_COLUMNS,
            settings={"insert_deduplication_token": f"{token}:{start_row}", **_ANY_DAYS},
        )
    if rows.dead_letters:
        client.insert(
            "dead_letters",
            rows.dead_letters,
            column_names=DEAD_LETTER_COLUMNS,
            settings={"insert_deduplication_token": f"{token}:dead_letters", **_ANY_DAYS},
        )
