"""Every metric the processes export, in one place: the dashboard "Centrality itself" and the
alert rules (`infra/prometheus/`) are checked against these names by the tests.

Labels stay bounded: topics, event types, rules, actions, reasons and outcomes are finite sets
of ours; no subject, node or job id is ever a label.
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Sequence
from typing import Protocol

from prometheus_client import Counter, Gauge, Histogram

EVENTS_IN = Counter(
    "centrality_events_in",
    "Events (or, where a process does not decode them, records) consumed, by topic and type.",
    ["topic", "type"],
)
EVENTS_OUT = Counter(
    "centrality_events_out",
    "Events produced (acknowledged by Kafka or spooled), by topic and type.",
    ["topic", "type"],
)
CONSUMER_LAG = Gauge(
    "centrality_consumer_lag",
    "Messages on an assigned partition not yet committed by this consumer group.",
    ["group", "topic", "partition"],
)
PROCESSING_SECONDS = Histogram(
    "centrality_processing_seconds",
    "Time to handle one unit of work: a message (streams), a trigger (actions), an insert (sink).",
    ["stage"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
DEAD_LETTERS = Counter(
    "centrality_dead_letters",
    "Messages sent to the dead letters, by the consumer that gave up and why.",
    ["consumer", "reason"],
)
DECISIONS = Counter(
    "centrality_decisions",
    "Triggers decided (and acknowledged by Kafka), by rule, trigger type and the rule's mode "
    "(live, or shadow: recorded, never carried out).",
    ["rule", "type", "mode"],
)
ACTIONS = Counter(
    "centrality_actions",
    "Triggers handled, by action and outcome: succeeded, planned (dry run), shadow (a rule in "
    "shadow mode: planned), failed, refused "
    "(allowlist, breaker, an operator without authority), held (a silence), in_doubt, "
    "duplicate.",
    ["action", "outcome"],
)
BATCH_WAITING = Gauge(
    "centrality_actions_batch_waiting",
    "Quarantines waiting for room in their batch (a big job's suspects, drained a few at a time).",
)
BREAKER_REFUSALS = Counter(
    "centrality_breaker_refusals",
    "Actions the circuit breaker refused.",
    ["action"],
)
SLACK_CALLS = Counter(
    "centrality_slack_calls",
    "Slack Web API calls, by method and answer: ok, ratelimited (429, waited out), refused "
    "(Slack's error: a bad token or channel, blocks it refuses), failed (5xx, the connection).",
    ["method", "outcome"],
)
SLACK_MESSAGES = Counter(
    "centrality_slack_messages",
    "Messages handed to the Slack notifier, by what became of them: posted, updated (a parent "
    "edited in place), coalesced (an update overtaken by a later one), digest (folded into a "
    "digest message), dropped (the channel's queue full), lost (given up or refused).",
    ["outcome"],
)
SLACK_WAITING = Gauge(
    "centrality_slack_waiting",
    "Messages waiting for their turn in a Slack channel, digests' included, over all channels.",
)
INCIDENTS_TOLD = Counter(
    "centrality_incidents_told",
    "Incident records the Slack teller finished, by what people were told: opened (a thread's "
    "parent posted), updated (its parent edited), replied (a step in its thread), nothing (no "
    "change people read), superseded (a later record of the incident came first), lost.",
    ["told"],
)
POLLS = Counter(
    "centrality_polls",
    "Polls of a collector (a watcher, the tailer, the checkpoint watcher), by outcome.",
    ["collector", "outcome"],
)
TABLE_ENTRIES = Gauge(
    "centrality_table_entries",
    "Entries of a streams table on this worker's partitions.",
    ["table"],
)
STORE_BYTES = Gauge(
    "centrality_store_bytes",
    "Memory RocksDB holds for a streams table's partitions on this worker, by what holds it: "
    "memtables, table_readers (index and filter blocks of open files), block_cache.",
    ["table", "held_by"],
)
DEPENDENCY_UP = Gauge(
    "centrality_dependency_up",
    "1 while a service this process needs (kafka, clickhouse) answers its probe, else 0.",
    ["dependency"],
)
DEPENDENCY_OUTAGES = Counter(
    "centrality_dependency_outages",
    "Outages of a service this process needs: times its probe started failing.",
    ["dependency"],
)
DEPENDENCY_DOWN_SECONDS = Gauge(
    "centrality_dependency_down_seconds",
    "How long the current outage of a service this process needs has lasted (0: none).",
    ["dependency"],
)
DEPENDENCY_LINES_HELD_BACK = Counter(
    "centrality_dependency_log_lines_held_back",
    "Client log lines counted instead of logged: during an outage, and repeats beyond a few.",
    ["dependency"],
)
# The spool depth (`centrality_spool_bytes`), readiness (`centrality_ready`) and the event
# loop's heartbeat age (`centrality_heartbeat_age_seconds`) are read when scraped: see
# `schemas.runtime.metrics.server`.


@functools.cache
def labelled(counter: Counter, *labels: str) -> Counter:
    """`counter.labels(*labels)`, kept: on the hot paths (per message, per emitted event)
    prometheus-client's own lookup costs more than the increment."""
    return counter.labels(*labels)


class _Typed(Protocol):
    @property
    def type(self) -> str: ...


def count_types(counter: Counter, topic: str, events: Sequence[_Typed]) -> None:
    """Count a message's events by type; a message nearly always carries one family."""
    first = events[0].type
    if all(e.type == first for e in events):
        labelled(counter, topic, first).inc(len(events))
        return
    for type_, count in collections.Counter(e.type for e in events).items():
        labelled(counter, topic, type_).inc(count)
