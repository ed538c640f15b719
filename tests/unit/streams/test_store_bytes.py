"""What RocksDB holds for a table, by RocksDB's own accounting (`centrality_store_bytes`): the
memory that grows outside Python's heap, where tracemalloc never looks."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import rocksdict

from streams.faust.observe import store_bytes


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
