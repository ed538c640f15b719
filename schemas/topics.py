"""The topic catalog: every topic Centrality reads or writes, and how it must be configured."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, Self, get_args

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DAY_MS = 24 * 3600 * 1000


class Prefixed(Protocol):
    """What names a deployment's topics: `schemas.runtime.settings.KafkaSettings` is one."""

    @property
    def topic_prefix(self) -> str: ...


TopicFamily = Literal["tables", "logs", "triggers", "deadletter"]


@dataclass(frozen=True)
class Layout:
    """How the topics of one family are spread and replicated on the cluster."""

    partitions: int
    replication_factor: int
    min_insync_replicas: int


class TopicSettings(BaseSettings):
    """`CENTRALITY_TOPICS_*`: partitions, replication factor and `min.insync.replicas` per topic
    family. `tables`: the topics the streams tables are keyed by (jobs, nodes, gpu, actions, and
    the streams worker's own topics and changelogs); their partition count is the most streams
    workers that share the load, and all of them must have it (checked when the worker starts).
    `logs`: raw log lines. `triggers`: triggers and the action ledger (the most action workers
    that share the load). `deadletter`: dead letters. On a cluster of 3+ brokers use replication
    factor 3 and `min.insync.replicas` 2: every producer of ours waits for all in-sync replicas.
    """

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_TOPICS_", extra="ignore")

    tables_partitions: int = Field(default=4, ge=1, description="Partitions of `tables` topics.")
    tables_replication_factor: int = Field(default=1, ge=1, description="Their replicas.")
    tables_min_insync_replicas: int = Field(default=1, ge=1, description="Their min ISR.")
    logs_partitions: int = Field(default=4, ge=1, description="Partitions of the logs topic.")
    logs_replication_factor: int = Field(default=1, ge=1, description="Its replicas.")
    logs_min_insync_replicas: int = Field(default=1, ge=1, description="Its min ISR.")
    triggers_partitions: int = Field(
        default=4, ge=1, description="Partitions of the triggers and action-ledger topics."
    )
    triggers_replication_factor: int = Field(default=1, ge=1, description="Their replicas.")
    triggers_min_insync_replicas: int = Field(default=1, ge=1, description="Their min ISR.")
    deadletter_partitions: int = Field(
        default=1, ge=1, description="Partitions of the dead-letter topic."
    )
    deadletter_replication_factor: int = Field(default=1, ge=1, description="Its replicas.")
    deadletter_min_insync_replicas: int = Field(default=1, ge=1, description="Its min ISR.")

    @model_validator(mode="after")
    def _reachable_isr(self) -> Self:
        for family in get_args(TopicFamily):
            layout = self.of(family)
            if layout.min_insync_replicas > layout.replication_factor:
                raise ValueError(
                    f"{family}: min_insync_replicas {layout.min_insync_replicas} > "
                    f"replication_factor {layout.replication_factor} (no write could succeed)"
                )
        return self

    def of(self, family: TopicFamily) -> Layout:
        return Layout(
            partitions=getattr(self, f"{family}_partitions"),
            replication_factor=getattr(self, f"{family}_replication_factor"),
            min_insync_replicas=getattr(self, f"{family}_min_insync_replicas"),
        )


@dataclass(frozen=True)
class TopicSpec:
    """What a topic is for; how many partitions and replicas it has is its family's `Layout`
    (`TopicSettings`, above), set per deployment rather than fixed by the catalog."""

    name: str
    key: str
    family: TopicFamily
    retention_ms: int
    description: str
    compacted: bool = False
    batched: bool = False
    carries_events: bool = True  # False: records of our own (ledger, dead letters), not events
    # Compaction only cleans closed segments: a compacted topic read whole by every reader
    # rolls its segments this often, so what it holds stays near one record per key.
    segment_ms: int | None = None

    def full_name(self, settings: Prefixed) -> str:
        return f"{settings.topic_prefix}{self.name}"

    def configs(self, layout: Layout) -> dict[str, str]:
        policy = "delete"
        if self.compacted:  # a compacted topic with a retention also forgets keys that old
            policy = "compact,delete" if self.retention_ms > 0 else "compact"
        configs = {
            "cleanup.policy": policy,
            "retention.ms": str(self.retention_ms),
            "min.insync.replicas": str(layout.min_insync_replicas),
        }
        if self.segment_ms is not None:
            configs["segment.ms"] = str(self.segment_ms)
        return configs


CATALOG: tuple[TopicSpec, ...] = (
    TopicSpec(
        "jobs",
        "job id",
        "tables",
        30 * DAY_MS,
        "Job lifecycle, checkpoints and edge log signals.",
    ),
    TopicSpec(
        "logs",
        "job id",
        "logs",
        7 * DAY_MS,
        "Raw log lines, batched per job.",
        batched=True,
    ),
    TopicSpec("nodes", "node id", "tables", 30 * DAY_MS, "Heartbeats, health checks and XIDs."),
    TopicSpec(
        "gpu",
        "node id",
        "tables",
        7 * DAY_MS,
        "GPU and NCCL samples, batched per node and interval.",
        batched=True,
    ),
    TopicSpec(
        "triggers",
        "subject",
        "triggers",
        90 * DAY_MS,
        "Decisions of rules, with deterministic ids.",
    ),
    TopicSpec(
        "actions", "subject", "tables", 90 * DAY_MS, "What action workers did about triggers."
    ),
    # A ledger entry matters while its trigger can still be delivered (the triggers topic keeps
    # them 90 days) and breakers look back hours, not months: kept as long, so the ledger every
    # worker reads back on start does not grow with every trigger ever decided.
    TopicSpec(
        "action-ledger",
        "trigger id; told/<incident id>",
        "triggers",
        90 * DAY_MS,
        "What action workers did per trigger id, and what was told of each incident in Slack; "
        "compacted, read back on start.",
        compacted=True,
        carries_events=False,
    ),
    # What the streams app believes about each node and job now, published when it changes:
    # compacted, and never forgotten by age (a quiet node is still part of the fleet).
    TopicSpec(
        "status",
        "subject",
        "tables",
        -1,
        "What the streams app's tables hold per node and job, as people read it; compacted.",
        compacted=True,
        segment_ms=3600 * 1000,
    ),
    # Incidents, each whole each time what people read of it changes: compacted (the current
    # state of each), forgetting resolved ones after 30 days; ClickHouse keeps every version.
    TopicSpec(
        "incidents",
        "incident id",
        "triggers",
        30 * DAY_MS,
        "Incidents (what shares a cause), opened, updated and resolved; compacted.",
        compacted=True,
        segment_ms=3600 * 1000,
    ),
    TopicSpec(
        "silences",
        "silence id",
        "triggers",
        -1,
        "Operators' silences (signed), read back whole by every action worker; compacted.",
        compacted=True,
        segment_ms=DAY_MS,
    ),
    TopicSpec(
        "deadletter",
        "source topic",
        "deadletter",
        30 * DAY_MS,
        "Messages no consumer could decode, with the reason and the raw bytes.",
        carries_events=False,
    ),
)

_BY_NAME = {spec.name: spec for spec in CATALOG}


def spec(name: str) -> TopicSpec:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"{name!r} is not in the topic catalog: {sorted(_BY_NAME)}") from None


def topic_name(name: str, settings: Prefixed) -> str:
    return spec(name).full_name(settings)


def partition_count(name: str, topics: TopicSettings | None = None) -> int:
    """How many partitions the catalog topic `name` is created with under `topics`."""
    return (topics or TopicSettings()).of(spec(name).family).partitions
