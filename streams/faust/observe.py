"""The Faust worker's metrics and health (`schemas.runtime.metrics`), served beside Faust's own
loop.

Ready once the group gave this worker its partitions (an empty share counts: it is in the
group) and the tables are recovered from their changelogs; not while a rebalance or a recovery
is under way, nor while Kafka is unreachable (probed, and said in few lines:
`schemas.runtime.outages`).
Table sizes and consumer lag are sampled on the worker's loop every `SAMPLE_S`: a table's size is
a walk over its store, too much per scrape.
"""

from __future__ import annotations

import asyncio
from typing import Any

import rocksdict

from schemas.runtime.metrics.catalog import CONSUMER_LAG, STORE_BYTES, TABLE_ENTRIES
from schemas.runtime.metrics.server import READINESS, serving, watch_kafka
from schemas.runtime.settings import KafkaSettings

SAMPLE_S = 15.0


def install(app: Any, kafka: KafkaSettings, tables: dict[str, Any]) -> None:
    assigned = asyncio.Event()
    recovery = app.tables.recovery
    watch_kafka(kafka)
    READINESS.add("partitions_assigned", assigned.is_set)
    READINESS.add("tables_recovered", lambda: recovery.completed.is_set() and not app.in_recovery)

    @app.on_partitions_assigned.connect  # type: ignore[untyped-decorator]
    async def _assigned(sender: Any, *args: Any, **kwargs: Any) -> None:
        assigned.set()

    @app.on_partitions_revoked.connect  # type: ignore[untyped-decorator]
    async def _revoked(sender: Any, *args: Any, **kwargs: Any) -> None:
        assigned.clear()

    @app.task  # type: ignore[untyped-decorator]
    async def serve_metrics() -> None:
        async with serving("streams"):
            await asyncio.Event().wait()  # until Faust cancels its tasks at stop

    @app.timer(SAMPLE_S)  # type: ignore[untyped-decorator]
    async def sample() -> None:
        for name, table in tables.items():
            TABLE_ENTRIES.labels(name).set(entries(table))
            for held_by, held in store_bytes(table).items():
                STORE_BYTES.labels(name, held_by).set(held)
        consumer, group = app.consumer, app.conf.id
        CONSUMER_LAG.clear()  # partitions revoked since the last sample are no longer ours
        for tp in consumer.assignment():
            if tp.topic.endswith("-changelog"):
                continue  # standby replicas, not work
            committed = consumer._committed_offset.get(tp)  # Faust keeps it; no public reader
            end = consumer.highwater(tp)  # None before the partition's first fetch
            if committed is not None and end is not None:
                lag = max(0, end - committed)
                CONSUMER_LAG.labels(group, tp.topic, str(tp.partition)).set(lag)


def entries(table: Any) -> int:
    """The keys of the table's partitions this worker owns. Faust's `len(table)` reads every
    block of every partition through RocksDB's block cache: run each sample, it filled every
    partition's cache to its bound, and the worker's memory grew a megabyte a minute with it
    (docs/scaling.md). This scan leaves the cache as it was (`fill_cache` off).
    `_dbs_for_actives` and `offset_key` are Faust's; there is no public reader of either."""
    store = table.data
    actives = getattr(store, "_dbs_for_actives", None)
    if actives is None:  # `memory://`: a dict
        return len(table)
    scan = rocksdict.ReadOptions()
    scan.fill_cache(False)  # type: ignore[call-arg]  # the stub lacks its argument
    return sum(
        1 for db in list(actives()) for key in db.keys(read_opt=scan) if key != store.offset_key
    )


# What RocksDB holds outside Python's heap, by its own accounting (tracemalloc never sees it).
_HELD_BY = {
    "memtables": "rocksdb.cur-size-all-mem-tables",
    "table_readers": "rocksdb.estimate-table-readers-mem",
    "block_cache": "rocksdb.block-cache-usage",
}


def store_bytes(table: Any) -> dict[str, int]:
    """The table's partitions summed; nothing for a store that is not RocksDB (`memory://`).
    Faust keeps a store's open databases in `_dbs` and has no public reader of them."""
    dbs = getattr(table.data, "_dbs", None) or {}
    held = dict.fromkeys(_HELD_BY, 0)
    for db in list(dbs.values()):
        for held_by, name in _HELD_BY.items():
            held[held_by] += db.property_int_value(name) or 0
    return held
