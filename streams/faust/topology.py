"""The streams worker's Faust wiring: the app and its settings, the transport's fixes, the
topics, the tables and the agents. `streams.faust.app.create_app()` builds it; the work each
message gets is `StreamsApp`'s (streams/faust/app.py), and the pure part of it
`streams.brain.plan`'s.

Every topic has the same partition count, so tables are co-partitioned:

- `jobs`, the job-forward topic and the job-ticks topic → `fold_jobs` → `jobs` table;
- `nodes`, `gpu` (batched), `actions`, the forward topic and the node-ticks topic → `fold_nodes`
  → `nodes`, `node_sets`, `incident_books` and `incidents` tables. The forward topic (internal,
  `<app id>-forward`) carries what a job event, a decision or an action result means for a node
  or a node set, keyed by that node or node set; the job-forward topic (`<app id>-job-forward`),
  what an action result means for the job it acted on. Action results have no table of their
  own: they are only forwarded.
- Each table has one writer, the agent that reads its forward topic: a fold reads the state,
  sends its outputs and writes once they are acknowledged, so two agents folding one entity at
  once would each write what they read and drop the other's change. An event read by the
  other agent is forwarded.
- A leader timer sends one tick per partition every `tick_interval_s`; the agent owning the
  partition ticks each of its entities, so rules can see silence (lost heartbeats, stalls).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import faust

from schemas.codec import DecodeError, decode
from schemas.envelope import Event
from schemas.placement import Placement
from schemas.runtime.settings import KafkaSettings
from schemas.topics import TopicSettings, topic_name
from streams.faust import credentials, observe, topics
from streams.faust import transport as faust_transport
from streams.faust.batching import in_batches
from streams.faust.lanes import LanedApp, Lanes, routine
from streams.faust.table_manager import TableManager
from streams.faust.worker import Worker
from streams.settings import StreamsSettings
from streams.state.entities import INCIDENT_BOOKS, INCIDENTS, JOBS, KINDS, NODE_SETS, NODES
from streams.state.internal import decode_internal

COMMIT_ON_TIMER_ONLY = 2**62  # messages: never reached
# The tables each agent writes: a table's one writer is the agent reading its forward topic.
JOB_AGENT = frozenset({JOBS.table})
NODE_AGENT = frozenset({NODES.table, NODE_SETS.table, INCIDENT_BOOKS.table, INCIDENTS.table})


class RawSchema(faust.Schema[bytes, bytes]):
    """Bytes in, bytes out: decoding is ours (schemas.codec), done once, dead-lettered on error.

    Faust's own decode of a record asks its codec registry and the app's settings each time to
    turn bytes into the same bytes (~7 µs a record in `bench streams`); this one makes the event
    at once, of the record's own key, value and headers."""

    def compile(
        self, app: Any, *, default_propagate: bool = False, **on_decode_error: Any
    ) -> Callable[..., Awaitable[Any]]:
        make = app.conf.Event

        async def decode(message: Any, *, propagate: bool = default_propagate) -> Any:
            return make(app, message.key, message.value, message.headers, message)

        return decode


def raw() -> Any:
    """A new Schema each time: Faust mutates the schema it is given with its own defaults."""
    return RawSchema(key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw")


@dataclass
class Topology:
    """The Faust app, its topics and tables, and what routes a record among them."""

    app: LanedApp
    kafka: KafkaSettings
    partitions: int
    forward: str  # topic names
    job_forward: str
    triggers: str
    jobs_topic: Any  # Faust topics
    nodes_topic: Any
    triggers_topic: Any
    published: dict[str, Any]  # what people read, by the topic its event type names
    deadletter_topic: Any
    forward_topic: Any
    job_forward_topic: Any
    writers: dict[str, Any]  # each table's one writer, by the forward topic its agent reads
    ticks_topics: dict[str, Any]
    tick_inputs: dict[str, list[str]]  # what a tick of each kind may judge is bounded by
    ticks: dict[str, Any]  # tick topic name → the kind it ticks
    tables: dict[str, Any]
    decoders: dict[str, Callable[[bytes], list[Event]]]
    placement: Placement

    def catalog(self, name: str) -> str:
        return topic_name(name, self.kafka)


def wire(
    kafka: KafkaSettings, settings: StreamsSettings, overtaken: Callable[[Any], None]
) -> Topology:
    """The app, its topics and tables; `overtaken` hears of a routine record queued behind later
    ones of its partition (streams.faust.lanes)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)  # Faust creates only the last level
    scheme = faust_transport.install(settings.fetch_max_wait_ms, settings.send_retry_s)
    # One partition count keeps every table co-partitioned with what it folds; `centrality
    # streams` checks the broker's topics against it before starting
    # (streams.faust.topics.check_copartitioned).
    layout = TopicSettings().of("tables")
    app = _app(kafka, settings, scheme, layout.partitions, layout.replication_factor)
    # GPU samples, heartbeats and passed health checks are the telemetry: queued behind
    # whatever leads to decisions (streams.faust.lanes); a tick waits for the records that XIDs
    # overtook.
    app.lanes = Lanes(
        bulk_topics=frozenset({topic_name("gpu", kafka)}),
        bulk_records_max=settings.bulk_lane_records,
        telemetry=routine,
        overtaken=overtaken,
    )
    # Values are the entity's JSON document, serialized by pydantic (bytes in, bytes out):
    # readable in the changelog by any tool, and no second serialization by Faust.
    tables = {
        kind.table: app.Table(
            kind.table,
            default=None,
            key_type=bytes,  # the store decodes keys and values by these, not by the schema
            value_type=bytes,
            schema=raw(),
            partitions=layout.partitions,
            extra_topic_configs={"min.insync.replicas": str(layout.min_insync_replicas)},
            options=settings.store_options(busy=kind is NODES),  # Faust pops from it: one each
        )
        for kind in KINDS
    }
    observe.install(app, kafka, tables)
    return _routed(app, kafka, settings, layout.partitions, tables)


def _routed(
    app: LanedApp,
    kafka: KafkaSettings,
    settings: StreamsSettings,
    partitions: int,
    tables: dict[str, Any],
) -> Topology:
    """The topics, and which of them each kind is read from, written through and ticked by."""

    catalog = partial(topic_name, settings=kafka)
    forward, job_forward = topics.forward(settings), topics.job_forward(settings)
    job_ticks, node_ticks = topics.job_ticks(settings), topics.node_ticks(settings)
    # Faust declares these on start: it creates our internal topics and leaves existing
    # catalog topics alone (`centrality up` creates those with the catalog's settings).
    internal: dict[str, Any] = {"schema": raw(), "partitions": partitions, "internal": True}
    jobs_topic = app.topic(catalog("jobs"), job_forward, job_ticks, **internal)
    nodes_topic = app.topic(
        catalog("nodes"), catalog("gpu"), catalog("actions"), forward, node_ticks, **internal
    )
    forward_topic = app.topic(forward, **internal)
    job_forward_topic = app.topic(job_forward, **internal)
    return Topology(
        app=app,
        kafka=kafka,
        partitions=partitions,
        forward=forward,
        job_forward=job_forward,
        triggers=catalog("triggers"),
        jobs_topic=jobs_topic,
        nodes_topic=nodes_topic,
        triggers_topic=app.topic(catalog("triggers"), schema=raw()),
        published={
            "status": app.topic(catalog("status"), schema=raw()),
            "incidents": app.topic(catalog("incidents"), schema=raw()),
        },
        deadletter_topic=app.topic(catalog("deadletter"), schema=raw()),
        forward_topic=forward_topic,
        job_forward_topic=job_forward_topic,
        writers={
            kind.table: job_forward_topic if kind is JOBS else forward_topic for kind in KINDS
        },
        ticks_topics={
            JOBS.table: app.topic(job_ticks, **internal),
            NODES.table: app.topic(node_ticks, **internal),
        },
        tick_inputs={
            JOBS.table: [t for t in jobs_topic.topics if t != job_ticks],
            NODES.table: [t for t in nodes_topic.topics if t != node_ticks],
        },
        ticks={job_ticks: JOBS, node_ticks: NODES},
        tables=tables,
        # Every topic but our internal ones carries contract events.
        decoders={forward: _decode_forward, job_forward: _decode_forward},
        # The placed catalog topics are checked as the sink and replay check them (the
        # partition count is the one `centrality streams` checked the broker against);
        # internal topics are ours.
        placement=Placement.of(catalog, lambda _: partitions),
    )


def _app(
    kafka: KafkaSettings, settings: StreamsSettings, scheme: str, partitions: int, replicas: int
) -> LanedApp:
    # Faust's own (90 s) unless the setting every client of ours reads is set.
    request_timeout: dict[str, Any] = (
        {}
        if kafka.request_timeout_s is None
        else {"broker_request_timeout": kafka.request_timeout_s}
    )
    return LanedApp(
        settings.app_id,
        broker=[f"{scheme}://{host}" for host in kafka.bootstrap.split(",")],
        broker_credentials=credentials.broker_credentials(kafka),
        store=settings.store,
        datadir=str(settings.data_dir),
        table_standby_replicas=settings.standby_replicas,
        topic_partitions=partitions,
        topic_replication_factor=replicas,
        autodiscover=False,
        web_enabled=False,
        broker_session_timeout=settings.session_timeout_s,
        broker_heartbeat_interval=settings.heartbeat_interval_s,
        broker_rebalance_timeout=settings.rebalance_timeout_s,
        **request_timeout,
        broker_commit_interval=settings.commit_interval_s,
        # Commits run on that timer only: Faust's delivery loop also commits inline every
        # `broker_commit_every` messages (10,000 by default) and delivers nothing meanwhile,
        # a fatal XID included, while the commit first drains the changelog
        # (streams/faust/README.md).
        broker_commit_every=COMMIT_ON_TIMER_ONLY,
        producer_linger=settings.producer_linger_s,
        # A send the broker does not acknowledge fails after this long (Faust's default:
        # 20 min, a wedged partition) and is retried by us, within `send_retry_s`
        # (streams.faust.failures).
        producer_request_timeout=settings.send_retry_s / 4,
        producer_max_batch_size=256 * 1024,
        stream_buffer_maxsize=16384,
        consumer_auto_offset_reset="earliest",  # streams.faust.transport relies on it (fix 7)
        Worker=Worker,  # logs through schemas.runtime.logs
        TableManager=TableManager,  # ready without Faust's second of waiting at start
    )


Handler = Callable[[Sequence[Any], frozenset[str]], Awaitable[None]]  # records, tables written


def agents(
    top: Topology, handle: Handler, idle: Callable[[], None], records_max: int
) -> tuple[Any, Any]:
    """The two agents, thin shells: their records to `handle`, together while more are queued
    (`streams.faust.batching`), with the tables each agent writes; `idle()` when one has
    nothing left to fold."""

    async def fold_jobs(stream: Any) -> None:
        await in_batches(stream, lambda records: handle(records, JOB_AGENT), records_max, idle)

    async def fold_nodes(stream: Any) -> None:
        await in_batches(stream, lambda records: handle(records, NODE_AGENT), records_max, idle)

    return (
        top.app.agent(top.jobs_topic, name="streams.faust.app.fold_jobs")(fold_jobs),
        top.app.agent(top.nodes_topic, name="streams.faust.app.fold_nodes")(fold_nodes),
    )


def _decode_forward(value: bytes) -> list[Event]:
    try:
        return [decode_internal(value)]
    except KeyError:  # not an internal type: a contract event the other agent handed over
        return decode(value)
    except Exception as exc:
        raise DecodeError("invalid-internal", str(exc)) from None
