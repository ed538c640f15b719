"""The streams worker's own topics (beside the catalog's): created before the worker starts, and
the co-partitioning its tables need, checked on the broker before the worker starts.

Faust creates internal topics itself while it starts, but subscribes in the same breath: a topic
the broker's metadata does not list yet is "ignored" for the whole life of the worker. On a first
start that silently dropped the node-ticks topic, and with it every rule that watches for
silence (lost heartbeats, idle GPUs). Creating them first, and waiting until the broker
describes them, makes the first start like every other.

A table shard lives with a partition number: the job and node tables, their changelogs and every
topic folded into them must have the same partition count, or a key's events and its state end
up in different shards. The count is a setting (`CENTRALITY_TOPICS_TABLES_PARTITIONS`) and the
topics may predate it, so it is checked against what the broker has, not assumed.
"""

from __future__ import annotations

import asyncio
import time

from schemas.runtime import kafka_clients
from schemas.runtime.admin import CatalogReport, ensure_topics
from schemas.runtime.settings import KafkaSettings
from schemas.topics import CATALOG, DAY_MS, TopicSettings, TopicSpec
from streams.settings import StreamsSettings
from streams.state.entities import KINDS

_SETTLE_S = 10.0


class NotCopartitionedError(RuntimeError):
    """Topics the streams tables read disagree with the tables' partition count."""


def forward(settings: StreamsSettings) -> str:
    return f"{settings.app_id}-forward"


def job_forward(settings: StreamsSettings) -> str:
    return f"{settings.app_id}-job-forward"


def job_ticks(settings: StreamsSettings) -> str:
    return f"{settings.app_id}-job-ticks"


def node_ticks(settings: StreamsSettings) -> str:
    return f"{settings.app_id}-node-ticks"


def changelogs(settings: StreamsSettings) -> list[str]:
    """Faust's names for the tables' changelog topics."""
    return [f"{settings.app_id}-{kind.table}-changelog" for kind in KINDS]


def internal_topics(settings: StreamsSettings) -> tuple[TopicSpec, ...]:
    derived = "What job events, decisions and action results mean for nodes and node sets."
    for_jobs = "What action results mean for the jobs they act on (a restart's outcome)."
    return (
        TopicSpec(forward(settings), "node or node set", "tables", 7 * DAY_MS, derived),
        TopicSpec(job_forward(settings), "job", "tables", 7 * DAY_MS, for_jobs),
        TopicSpec(job_ticks(settings), "partition", "tables", DAY_MS, "Clock ticks for jobs."),
        TopicSpec(node_ticks(settings), "partition", "tables", DAY_MS, "Clock ticks for nodes."),
        # Faust would create these itself, but only after subscribing: a table whose changelog
        # is not there yet fails every event for it (PartitionsMismatch) until it is.
        *(
            TopicSpec(name, "entity key", "tables", -1, "A table's state.", compacted=True)
            for name in changelogs(settings)
        ),
    )


async def ensure_internal_topics(
    kafka: KafkaSettings, settings: StreamsSettings, topics: TopicSettings | None = None
) -> CatalogReport:
    # Internal names carry the app id, not the catalog's prefix.
    return await ensure_topics(
        kafka.model_copy(update={"topic_prefix": ""}), internal_topics(settings), topics
    )


async def check_copartitioned(
    kafka: KafkaSettings, settings: StreamsSettings, topics: TopicSettings | None = None
) -> dict[str, int]:
    """Partition counts of every topic the tables read or write (changelogs once they exist);
    raises `NotCopartitionedError` naming each one that lacks the tables' count."""
    want = (topics or TopicSettings()).tables_partitions
    required = [s.full_name(kafka) for s in CATALOG if s.family == "tables"]
    required += [s.name for s in internal_topics(settings)]
    names = required + changelogs(settings)
    admin = kafka_clients.admin(kafka)
    await admin.start()
    try:
        # Topics created a moment ago (`ensure_internal_topics`) are described only once the
        # broker's metadata caught up: ask again for a while before calling them missing.
        deadline = time.monotonic() + _SETTLE_S
        while True:
            described = {t["topic"]: t for t in await admin.describe_topics(names)}
            counts = {n: len(described.get(n, {}).get("partitions") or []) for n in names}
            missing = [n for n in required if not counts[n]]
            if not missing or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
    finally:
        await admin.close()
    if missing:
        raise NotCopartitionedError(
            f"topics the streams tables read are missing: {', '.join(missing)}; "
            "run `centrality up` (or create the catalog) first"
        )
    wrong = {n: c for n, c in counts.items() if c and c != want}
    if wrong:
        found = ", ".join(f"{n} has {c}" for n, c in wrong.items())
        raise NotCopartitionedError(
            f"the streams tables need every topic they read co-partitioned, {want} partitions "
            f"each (CENTRALITY_TOPICS_TABLES_PARTITIONS), but {found}. Set the setting to the "
            "topics' count, or recreate these topics with it."
        )
    return {n: c for n, c in counts.items() if c}
