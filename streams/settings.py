"""Settings of the streams worker (`CENTRALITY_STREAMS_*`, plus `CENTRALITY_RULES`).

The built-in rules are always loaded; `CENTRALITY_RULES` adds modules of one's own beside them,
and `CENTRALITY_STREAMS_RULE_CONFIG` configures any rule by name: `{"fatal_xid": {"enabled":
false}}` switches one off, `{"my_rule": {"mode": "shadow"}}` lets one decide without acting.
"""

import pkgutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.runtime import collector, malloc
from schemas.runtime.local_stack import LocalStackSettings
from streams.state.incidents import WINDOW_S as INCIDENT_WINDOW_S


def _builtin_rules() -> tuple[str, ...]:
    """Every module of `streams.rules.builtin`: a new built-in rule is a new module, no list."""
    import streams.rules.builtin as builtin

    names = sorted(m.name for m in pkgutil.iter_modules(builtin.__path__))
    return tuple(f"{builtin.__name__}.{name}" for name in names if not name.startswith("_"))


BUILTIN_RULES = _builtin_rules()


def rule_modules(extra: Iterable[str]) -> list[str]:
    """The modules a worker loads: the built-in rules', then `extra` (each once)."""
    return list(dict.fromkeys([*BUILTIN_RULES, *extra]))


class StreamsSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_STREAMS_", extra="ignore")

    app_id: str = Field(
        default="centrality-streams",
        description="Faust app id: the consumer group and the prefix of table changelog topics.",
    )
    data_dir: Path = Field(
        default_factory=lambda: LocalStackSettings().state_dir / "streams",
        description="Where the worker keeps its RocksDB table stores (in the local stack's state "
        "dir unless set).",
    )
    store: str = Field(default="rocksdb://", description="Faust table store URL (`memory://` too).")
    # Each table partition is a RocksDB database of its own, and Faust's defaults give each a
    # 64 MiB write buffer (up to 3) and a 2 GiB block cache: the worker's memory grew with every
    # state written until each partition's buffers filled.
    store_write_buffer_bytes: int = Field(
        default=4 * 1024**2,
        ge=64 * 1024,
        description="RocksDB stores: the memory each node table partition gathers writes in "
        "before it flushes them to disk (two such buffers at most per partition; the other "
        "tables: STORE_QUIET_WRITE_BUFFER_BYTES). Larger buffers "
        "flush less often (each flush writes every state changed since the last), at the "
        "cost of memory that stays taken.",
    )
    store_quiet_write_buffer_bytes: int = Field(
        default=128 * 1024,
        ge=64 * 1024,
        description="RocksDB stores of the tables written far less often than the node table "
        "(jobs, node sets, incident books, incidents): the write buffer of each of their "
        "partitions, flushed only once full (two at most: 4 tables x partitions x 2 x this in "
        "all). Their writes stay in memory until then: at 2,000 nodes they gather ~0.14 MB a "
        "minute, so 1 MiB buffers filled for two hours and the worker's memory rose with them; "
        "128 KiB ones fill in minutes.",
    )
    store_block_cache_bytes: int = Field(
        default=8 * 1024**2,
        ge=0,
        description="RocksDB stores: the memory each table partition caches read blocks in.",
    )
    bulk_lane_records: int = Field(
        default=2048,
        ge=16,
        description="GPU sample records an agent's queue holds before their partitions stop "
        "being fetched (resumed at 40 %): the bulk lane of streams.faust.lanes. At Faust's own "
        "bound, which the other lanes keep (16,384), a worker behind the fleet could hold "
        "13,107 of them (~80 MB).",
    )
    fold_records_max: int = Field(
        default=256,
        ge=1,
        description="Most records an agent folds together while more are queued "
        "(streams.faust.batching): behind a backlog each node's and job's events of all of "
        "them are folded, viewed and written once. 1: a record at a time. A record that "
        "comes while a batch is folded waits for all of it: ~0.25 ms a record of `bench "
        "streams` on the 2-core VM, ~65 ms for 256.",
    )
    heap_trim_interval_s: float = Field(
        default=60.0,
        ge=0,
        description="How often the worker frees its garbage cycles (a full pass of Python's "
        "collector, which its thresholds make rare otherwise) and hands the memory it freed back "
        "to the system (glibc's malloc_trim): RocksDB's flushed write buffers and the batches "
        "freed in between stay resident otherwise, and the worker's RSS creeps up to their "
        "high-water mark. 0: never.",
    )
    gc_thresholds: collector.Thresholds = collector.thresholds_setting(
        collector.THRESHOLDS,
        "The worker's states live for seconds and counted as old, so Python's own walked the "
        "whole heap every ~1.2 s at 10,000 nodes (~15 % of the worker's CPU) and freed almost "
        "nothing.",
    )
    mmap_threshold_bytes: int = malloc.threshold_setting("fetch responses, batches")
    standby_replicas: int = Field(
        default=1,
        ge=0,
        description="Standby copies of each table shard other workers keep warm, so a failover "
        "need not restore the shard from its changelog first.",
    )
    rules: str = Field(
        default="",
        validation_alias=AliasChoices("CENTRALITY_RULES", "CENTRALITY_STREAMS_RULES"),
        description="Comma-separated rule modules of your own, loaded beside the built-in rules "
        "(which are always loaded: switch one off by name in CENTRALITY_STREAMS_RULE_CONFIG). "
        "Each must be importable where the worker runs.",
    )
    rule_config: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description='JSON: config per rule name, e.g. {"restart_incomplete_exit": '
        '{"max_restarts": 5}, "fatal_xid": {"enabled": false}, "my_rule": {"mode": "shadow"}}. '
        "Every rule takes enabled, mode (live or shadow), severity, for_s and cooldown_s, and "
        "scopes: its fields per node group or job class, e.g. "
        '[{"match": {"gpu_model": "NVIDIA A100*"}, "threshold": 5}] (docs/rules.md); '
        "`centrality rules` shows each rule's.",
    )
    session_timeout_s: float = Field(default=10.0, description="Consumer group session timeout.")
    heartbeat_interval_s: float = Field(default=1.0, description="Consumer group heartbeat.")
    rebalance_timeout_s: float = Field(
        default=10.0, description="Consumer group rebalance timeout."
    )
    tick_interval_s: float = Field(
        default=5.0, gt=0, description="How often the clock ticks rules that watch for silence."
    )
    incident_window_s: float = Field(
        default=INCIDENT_WINDOW_S,
        gt=0,
        description="Nodes whose faults of one kind (lost heartbeats, an XID, a failing health "
        "check) come within this long of one another in a cluster are one incident, told once.",
    )
    fetch_max_wait_ms: int = Field(
        default=20,
        ge=0,
        description="Longest a consumer fetch waits for data (Faust hard-codes 1500 ms).",
    )
    state_cache_entries: int = Field(
        default=100_000, ge=0, description="Decoded job/node states kept in memory per worker."
    )
    commit_interval_s: float = Field(
        default=2.8, gt=0, description="How often consumed offsets are committed."
    )
    producer_linger_s: float = Field(
        default=0.0,
        ge=0,
        description="Producer linger. A message's outputs are acknowledged before its state is "
        "written, and a message that decides waits for its triggers: this long and more; "
        "records still batch while a produce request is in flight. 0 measured best "
        "(BENCHMARKS.md).",
    )

    send_retry_s: float = Field(
        default=60.0,
        gt=0,
        description="How long a message's outputs (and a table change for the changelog) are "
        "retried while Kafka fails transiently (each send waits a quarter of it); then a message "
        "whose trigger failed is dead-lettered (`send-failed`) and the partitions go on. A "
        "forward, status or table change the broker has not taken by then stops the worker "
        "before any commit past it: restarted, it restores its tables from the changelog and "
        "re-decides from the last commit. Time the whole cluster is unreachable does not count: "
        "an outage is waited out.",
    )
    outputs_per_message_max: int = Field(
        default=8192,
        ge=1,
        description="Most forwards + triggers one message may yield; more is dead-lettered "
        "(`amplification`). One event fans out to at most 4096 nodes and its node set.",
    )
    stop_timeout_s: float = Field(
        default=8.0,
        gt=0,
        le=9.5,
        description="`centrality streams` kills a worker still running this long after "
        "SIGTERM/SIGINT (its stores are then restored from the changelog).",
    )

    @property
    def rule_modules(self) -> list[str]:
        return rule_modules(m.strip() for m in self.rules.split(",") if m.strip())

    def store_options(self, *, busy: bool) -> dict[str, int]:
        """A table's RocksDB options (Faust's `RocksDBOptions`); a `memory://` store ignores
        them. `busy`: the node table, written with nearly every message."""
        buffer = self.store_write_buffer_bytes if busy else self.store_quiet_write_buffer_bytes
        return {
            "write_buffer_size": buffer,
            "max_write_buffer_number": 2,
            "block_cache_size": self.store_block_cache_bytes,
        }
