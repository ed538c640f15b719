"""The streams worker's own topics (beside the catalog's): created before the worker starts.

Faust creates internal topics itself while it starts, but subscribes in the same breath: a topic
the broker's metadata does not list yet is "ignored" for the whole life of the worker. On a first
start that silently dropped the node-ticks topic, and with it every rule that watches for
silence (lost heartbeats, idle GPUs). Creating them first, and waiting until the broker
describes them, makes the first start like every other.
"""

from __future__ import annotations

from schemas.admin import CatalogReport, ensure_topics
from schemas.settings import KafkaSettings
from schemas.topics import DAY_MS, JOB_PARTITIONS, TopicSpec
from streams.settings import StreamsSettings

PARTITIONS = JOB_PARTITIONS  # co-partitioned with the catalog topics the tables are keyed by


def forward(settings: StreamsSettings) -> str:
    return f"{settings.app_id}-forward"


def job_ticks(settings: StreamsSettings) -> str:
    return f"{settings.app_id}-job-ticks"


def node_ticks(settings: StreamsSettings) -> str:
    return f"{settings.app_id}-node-ticks"


def internal_topics(settings: StreamsSettings) -> tuple[TopicSpec, ...]:
    derived = "What job events, decisions and action results mean for nodes and node sets."
    return (
        TopicSpec(forward(settings), "node or node set", PARTITIONS, 7 * DAY_MS, derived),
        TopicSpec(job_ticks(settings), "partition", PARTITIONS, DAY_MS, "Clock ticks for jobs."),
        TopicSpec(node_ticks(settings), "partition", PARTITIONS, DAY_MS, "Clock ticks for nodes."),
    )


async def ensure_internal_topics(kafka: KafkaSettings, settings: StreamsSettings) -> CatalogReport:
    # Internal names carry the app id, not the catalog's prefix.
    return await ensure_topics(
        kafka.model_copy(update={"topic_prefix": ""}), internal_topics(settings)
    )
