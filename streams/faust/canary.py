"""The private Faust, mode and aiokafka names `streams.faust.transport` relies on, checked at
start-up.

The transport's fixes (see streams/faust/README.md) override or wrap private methods. An upgrade
that renames one, or changes its parameters, would otherwise silently turn a fix off (the
override is never called) or fail deep inside the worker. Each entry is a name and the parameter
names it must have; `check` lists every mismatch, and `require` refuses to start with all of them.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from importlib import metadata

PINNED = {"faust-streaming": "0.15.3", "mode-streaming": "0.7.1", "aiokafka": "0.14.0"}

# "module:Class.attribute" → parameter names (None: it must exist; its signature is not ours).
EXPECTED: Mapping[str, tuple[str, ...] | None] = {
    "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread._create_worker_consumer": (
        "self",
        "transport",
    ),
    "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread.seek": ("self", "partition", "offset"),
    "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread.seek_to_beginning": (
        "self",
        "partitions",
    ),
    "faust.transport.drivers.aiokafka:Consumer._new_consumer_thread": ("self",),
    "faust.transport.drivers.aiokafka:Consumer.getmany": ("self", "timeout"),
    "faust.transport.drivers.aiokafka:Consumer.perform_seek": ("self",),
    "faust.transport.drivers.aiokafka:Consumer.seek_to_committed": ("self",),
    "faust.transport.drivers.aiokafka:Consumer._is_changelog_tp": ("self", "tp"),
    "faust.transport.drivers.aiokafka:Consumer.stop_flow": ("self",),
    "faust.transport.drivers.aiokafka:Consumer.resume_flow": ("self",),
    "faust.transport.drivers.aiokafka:Producer.__init__": ("self", "transport", "loop", "kwargs"),
    "faust.transport.drivers.aiokafka:Producer.flush": ("self",),
    "faust.transport.drivers.aiokafka:Producer.on_stop": ("self",),
    "faust.transport.drivers:TRANSPORTS": None,
    "faust.transport.producer:ProducerBuffer.__post_init__": ("self",),
    "faust.transport.producer:ProducerBuffer._send_pending": ("self", "fut"),
    "faust.transport.producer:ProducerBuffer._handle_pending": None,
    "faust.transport.producer:ProducerBuffer.size": None,
    # fix 11: Faust answers a changelog record's FutureMessage when the broker has (or refused)
    "faust.topics:Topic._on_published": ("self", "fut", "message", "producer", "state"),
    "mode.services:Service.wait_first": ("self", "coros", "timeout"),
    # topology.RawSchema: Faust's topics compile their schema's decode with these.
    "faust.serializers.schemas:Schema.compile": (
        "self",
        "app",
        "on_key_decode_error",
        "on_value_decode_error",
        "default_propagate",
    ),
    "faust.app.base:App.maybe_start_producer": None,  # fix 10: a stampede, not a function
    "aiokafka.consumer.fetcher:MemoryRecords": None,
    # fix 13: the producer's batches (aiokafka's class: `install` replaces the name).
    "streams.faust.batch_lifetime:AIOKAFKA_BATCH.__init__": (
        "self",
        "tp",
        "builder",
        "ttl",
        "linger_time",
    ),
    "streams.faust.batch_lifetime:AIOKAFKA_BATCH.expired": ("self",),
    # lanes.py: the stream queue Faust makes, the hooks it overrides, and what calls them.
    "faust.app.base:App.FlowControlQueue": ("self", "maxsize", "clear_on_resume"),
    "mode.utils.queues:FlowControlQueue.put_nowait_enhanced": (
        "self",
        "value",
        "on_pressure_high",
        "on_pressure_drop",
    ),
    "mode.utils.queues:FlowControlQueue.maybe_endorse_pressure_drop": ("self",),
    "mode.utils.queues:FlowControlQueue.force_put_nowait": ("self", "item"),
    "mode.utils.queues:FlowControlQueue.pressure_high_size": None,
    "aiokafka.consumer.fetcher:PartitionRecords._unpack_records": ("self",),
    # fix 12: each fetch's positions, read from aiokafka's assignment as its `highwater` does.
    "faust.transport.consumer:Consumer._wait_next_records": ("self", "timeout"),
    "faust.transport.consumer:Consumer._filter_tps_with_pending_acks": ("self", "topics"),
    "faust.transport.consumer:Consumer._filter_committable_offsets": ("self", "tps"),
    "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread._ensure_consumer": ("self",),
    "aiokafka.consumer.subscription_state:Assignment.tps": None,
    "aiokafka.consumer.subscription_state:Assignment.state_value": ("self", "tp"),
    "aiokafka.consumer.subscription_state:TopicPartitionState.position": None,
    "aiokafka.consumer.subscription_state:TopicPartitionState.has_valid_position": None,
    # streams.faust.batching: the current event Faust's tables take the partition of, set for
    # the record a table read or write is for; the stream's acknowledgements, turned off.
    "faust.streams:_current_event": None,
    "faust.streams:Stream.enable_acks": None,
    "faust.streams:Stream.ack": ("self", "event"),
    # streams.faust.table_manager: Faust's start of its table manager, less its sleep.
    "faust.tables.manager:TableManager.on_start": ("self",),
    "faust.tables.manager:TableManager._update_channels": ("self",),
    # streams.faust.worker: what mode's worker awaits before it closes the loop, shortened.
    "mode.worker:Worker._sentinel_task": ("self",),
}
# Source fragments that must still be there: attributes set inside a method, not declared.
SOURCE: Mapping[str, str | tuple[str, ...]] = {
    # streams.faust.table_manager: what Faust's `on_start` does, ours less the first line.
    "faust.tables.manager:TableManager.on_start": (
        "await self.sleep(1.0)",
        "if not self.should_stop:",
        "await self._update_channels()",
        "await self.recovery.start()",
    ),
    # streams.faust.worker: the loop is closed after the sentinel, and what it waits for.
    "mode.worker:Worker._shutdown_loop": "self._sentinel_task()",
    "mode.worker:Worker._sentinel_task": "await asyncio.sleep(1.0)",
    # fixes 1 and 12: values set on the consumer before start() hands them to its Fetcher.
    "aiokafka.consumer.consumer:AIOKafkaConsumer.start": (
        "self._fetch_max_wait_ms",
        "isolation_level=self._isolation_level",
    ),
    # streams/faust/observe.py reads what each table's RocksDB databases hold, and counts the
    # keys of those it owns without Faust's `len`.
    "faust.stores.rocksdb:Store.__init__": "self._dbs = {}",
    "faust.stores.rocksdb:Store._dbs_for_actives": "yield db",
    "faust.stores.rocksdb:Store._visible_keys": "if key != self.offset_key:",
    "aiokafka.consumer.consumer:AIOKafkaConsumer.highwater": "self._subscription.subscription",
    "aiokafka.consumer.fetcher:PartitionRecords._unpack_records": "records.next_batch()",
    "faust.types.tuples:Message.ack": "if not self.acked:",
    # streams/faust/observe.py reads the committed offsets for the consumer lag it reports.
    "faust.transport.consumer:Consumer.__init__": (
        "self._committed_offset = defaultdict(",
        "self._acked = defaultdict(list)",
        "self._read_offset = defaultdict(",
    ),
    # streams/faust/lanes.py: the conductor asks `full()` and then puts through these two.
    "faust.transport.conductor:ConductorCompiler.build": "queue.put_nowait_enhanced(",
    "asyncio.queues:Queue.put_nowait": "self._put(item)",
    "mode.utils.queues:FlowControlQueue.__init__": "self._flow_control",
    "asyncio.queues:Queue.get_nowait": "self._get()",
    # streams/faust/app.py: the delivery loop's inline commit, turned off by `broker_commit_every`.
    "faust.transport.consumer:Consumer._drain_messages": "if self._n_acked >= commit_every:",
    # fixes 2 and 11: a commit flushes the producer (our flush) before it commits.
    "faust.transport.consumer:Consumer._commit_offsets": "await self.app.producer.flush()",
    # fix 13: a batch's age and lifetime, and the accumulator making batches by module name.
    "streams.faust.batch_lifetime:AIOKAFKA_BATCH.__init__": (
        "self._ttl = ttl",
        "self._ctime = time.monotonic()",
    ),
    "aiokafka.producer.message_accumulator:MessageAccumulator._append_batch": "MessageBatch(",
    # fix 10: every send asks for the producer first.
    "faust.topics:Topic._get_producer": "self.app.maybe_start_producer()",
}


class FaustApiChanged(RuntimeError):
    """A private name the transport's fixes rely on is missing or changed."""


def _resolve(path: str) -> object:
    module, _, attributes = path.partition(":")
    found: object = importlib.import_module(module)
    for name in attributes.split("."):
        found = inspect.getattr_static(found, name)
    return found


def _parameters(found: object) -> tuple[str, ...] | None:
    target = found.__func__ if isinstance(found, staticmethod | classmethod) else found
    try:
        return tuple(inspect.signature(target).parameters)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def check(
    expected: Mapping[str, tuple[str, ...] | None] = EXPECTED,
    source: Mapping[str, str | tuple[str, ...]] = SOURCE,
) -> list[str]:
    """Every way the installed libraries differ from what the transport was written against."""
    problems = []
    for path, want in expected.items():
        try:
            found = _resolve(path)
        except (ImportError, AttributeError):
            problems.append(f"{path} is gone")
            continue
        if want is not None and (got := _parameters(found)) != want:
            problems.append(f"{path} takes {got}, expected {want}")
    for path, fragment in source.items():
        try:
            text = inspect.getsource(_resolve(path))  # type: ignore[arg-type]
        except (ImportError, AttributeError, OSError, TypeError):
            problems.append(f"{path} is gone")
            continue
        for piece in (fragment,) if isinstance(fragment, str) else fragment:
            if piece not in text:
                problems.append(f"{path} no longer contains {piece!r}")
    return problems


def require() -> None:
    problems = check()
    if problems:
        installed = {name: _version(name) for name in PINNED}
        raise FaustApiChanged(
            "streams.faust.transport patches private Faust/mode/aiokafka internals written for "
            f"{PINNED}; installed {installed}. Changed: " + "; ".join(problems) + ". Pin the "
            "versions above, or review each fix in streams/faust/README.md against the "
            "new code and update streams/faust/canary.py."
        )


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
