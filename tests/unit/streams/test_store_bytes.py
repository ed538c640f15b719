"""What RocksDB holds for a table, by RocksDB's own accounting (`centrality_store_bytes`): the
memory that grows outside Python's heap, where tracemalloc never looks."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import rocksdict
from faust.stores.rocksdb import RocksDBOptions

from streams.faust.observe import entries, store_bytes
from streams.settings import StreamsSettings
from tests.support.streams_app import in_memory


def test_a_tables_partitions_are_summed_by_what_holds_the_memory(tmp_path: Path) -> None:
    dbs = {p: rocksdict.Rdict(str(tmp_path / str(p))) for p in (0, 1)}
    try:
        empty = store_bytes(SimpleNamespace(data=SimpleNamespace(_dbs=dbs)))
        for db in dbs.values():
            for i in range(2000):
                db[f"node-{i:05d}".encode()] = b"x" * 200
        held = store_bytes(SimpleNamespace(data=SimpleNamespace(_dbs=dbs)))
        assert set(held) == {"memtables", "table_readers", "block_cache"}
        assert held["memtables"] > empty["memtables"] + 2 * 2000 * 200
    finally:
        for db in dbs.values():
            db.close()


def test_a_store_in_memory_holds_nothing_rocksdb_counts() -> None:
    assert store_bytes(SimpleNamespace(data=SimpleNamespace())) == {
        "memtables": 0,
        "table_readers": 0,
        "block_cache": 0,
    }


def test_entries_are_counted_exactly_and_leave_the_block_cache_alone(tmp_path: Path) -> None:
    """Faust's `len(table)` filled every partition's block cache each sample: the worker's
    memory grew with it. The count skips Faust's offset key, as `len` does."""
    options = rocksdict.Options(raw_mode=True)
    factory = rocksdict.BlockBasedOptions()
    factory.set_block_cache(rocksdict.Cache(64 << 20))
    options.set_block_based_table_factory(factory)
    db = rocksdict.Rdict(str(tmp_path / "0"), options=options)
    offset_key = b"__faust\0offset__"
    try:
        for i in range(20_000):
            db[f"node-{i:05d}".encode()] = b"x" * 200
        db[offset_key] = b"41"
        db.flush()
        cached = db.property_int_value("rocksdb.block-cache-usage")
        store = SimpleNamespace(_dbs_for_actives=lambda: iter([db]), offset_key=offset_key)
        assert entries(SimpleNamespace(data=store)) == 20_000
        assert db.property_int_value("rocksdb.block-cache-usage") == cached
    finally:
        db.close()


def test_a_store_in_memory_is_counted_as_a_dict() -> None:
    assert entries(_Table({"a": 1, "b": 2})) == 2


class _Table(dict[str, int]):
    data = SimpleNamespace()


def test_only_the_node_table_gathers_writes_in_the_large_buffer(tmp_path: Path) -> None:
    # The other tables, written a few times a minute, filled 1 MiB buffers for two hours of a
    # soak at 2,000 nodes: the worker's memory grew all the while (issue 42).
    app = in_memory(tmp_path, "key")
    buffers = {name: t.options["write_buffer_size"] for name, t in app.top.tables.items()}
    assert buffers == {
        "nodes": 4 << 20,
        "jobs": 128 << 10,
        "node_sets": 128 << 10,
        "incident_books": 128 << 10,
        "incidents": 128 << 10,
    }


def test_a_quiet_table_partition_holds_at_most_two_of_its_buffers(tmp_path: Path) -> None:
    """The bound docs/scaling.md gives, held by RocksDB opened as Faust opens a store: 4 MB
    of job states written, and never more than two 128 KiB buffers (and their arena's last
    block) in memory."""
    options: dict[str, Any] = StreamsSettings().store_options(busy=False)  # as Faust reads it
    db = RocksDBOptions(**options).open(tmp_path / "jobs-0")
    held_bytes = []
    try:
        for i in range(3000):
            db[f"job-{i % 500:04d}".encode()] = b"x" * 1500
            held_bytes.append(db.property_int_value("rocksdb.cur-size-all-mem-tables"))
    finally:
        db.close()
    assert max(held_bytes) <= 2 * options["write_buffer_size"] * 1.1
    assert held_bytes.index(max(held_bytes)) < len(held_bytes) - 1  # flushed, not only filled
