"""Create the topic catalog on a broker, and report drift instead of silently changing topics."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError, TopicAlreadyExistsError

from schemas.runtime import kafka_clients
from schemas.runtime.settings import KafkaSettings
from schemas.topics import CATALOG, TopicSettings, TopicSpec

_DESCRIBE_SETTLE_S = 10.0
# A topic created a moment ago may not be listed yet: asked again this long before it is missing.
_LIST_SETTLE_S = 5.0
_ANSWER_TIMEOUT_S = 10.0


class TopicCatalogError(RuntimeError):
    """The broker refused to create a catalog topic."""


class MissingTopicsError(RuntimeError):
    """Topics a worker reads or writes are not on the broker: the catalog was never created under
    this prefix (`centrality up` creates it)."""

    def __init__(self, settings: KafkaSettings, missing: list[str]) -> None:
        super().__init__(f"Kafka at {settings.bootstrap} has no topic {', '.join(missing)}")
        self.bootstrap = settings.bootstrap
        self.prefix = settings.topic_prefix
        self.missing = missing


def catalog_names(settings: KafkaSettings) -> list[str]:
    return [s.full_name(settings) for s in CATALOG]


async def require_topics(
    settings: KafkaSettings, names: Iterable[str], answer_timeout_s: float = _ANSWER_TIMEOUT_S
) -> None:
    """Raise `MissingTopicsError` naming those of `names` a broker that answers lacks. A broker
    that does not answer (within `answer_timeout_s`) is no answer: whoever asks starts and waits
    it out as it waits out any outage of Kafka."""
    admin = kafka_clients.admin(settings)
    try:
        await asyncio.wait_for(admin.start(), answer_timeout_s)
        missing = await _unlisted(admin, list(names))
    except (TimeoutError, KafkaConnectionError, KafkaTimeoutError):
        return
    finally:
        await admin.close()
    if missing:
        raise MissingTopicsError(settings, missing)


async def _unlisted(admin: AIOKafkaAdminClient, names: list[str]) -> list[str]:
    deadline = time.monotonic() + _LIST_SETTLE_S
    while True:
        existing = set(await admin.list_topics())
        missing = [n for n in names if n not in existing]
        if not missing or time.monotonic() > deadline:
            return missing
        await asyncio.sleep(0.2)


@dataclass
class CatalogReport:
    created: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    drift: dict[str, list[str]] = field(default_factory=dict)


async def ensure_topics(
    settings: KafkaSettings,
    catalog: tuple[TopicSpec, ...] = CATALOG,
    topics: TopicSettings | None = None,
    extra_configs: Mapping[str, str] | None = None,
) -> CatalogReport:
    """Create missing topics with their family's layout (`TopicSettings`) and `extra_configs`
    (a benchmark's); compare existing ones with the catalog and that layout, and report
    differences (never changed here: more partitions move keys, and replicas are a
    reassignment the operator plans)."""
    topics = topics or TopicSettings()
    report = CatalogReport()
    admin = kafka_clients.admin(settings)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [s for s in catalog if s.full_name(settings) not in existing]
        if missing:
            new = []
            for s in missing:
                layout = topics.of(s.family)
                new.append(
                    NewTopic(
                        s.full_name(settings),
                        layout.partitions,
                        layout.replication_factor,
                        topic_configs={**s.configs(layout), **(extra_configs or {})},
                    )
                )
            response = await admin.create_topics(new)
            for name, code, *rest in response.topic_errors:
                if code == TopicAlreadyExistsError.errno:
                    # Created meanwhile, or too new for the topic list we read: compare it too.
                    existing.add(name)
                    continue
                if code != 0:
                    message = rest[0] if rest else ""
                    raise TopicCatalogError(f"cannot create topic {name}: error {code} {message}")
                report.created.append(name)
        present = [s for s in catalog if s.full_name(settings) in existing]
        if present:
            await _check_drift(admin, settings, topics, present, report)
    finally:
        await admin.close()
    return report


async def inspect_topics(
    settings: KafkaSettings,
    catalog: tuple[TopicSpec, ...] = CATALOG,
    topics: TopicSettings | None = None,
) -> tuple[list[str], CatalogReport]:
    """The catalog topics missing, and how the present ones compare; nothing is created."""
    report = CatalogReport()
    admin = kafka_clients.admin(settings)
    try:
        await admin.start()
        existing = set(await admin.list_topics())
        present = [s for s in catalog if s.full_name(settings) in existing]
        if present:
            await _check_drift(admin, settings, topics or TopicSettings(), present, report)
    finally:
        await admin.close()
    missing = [s.full_name(settings) for s in catalog if s.full_name(settings) not in existing]
    return missing, report


async def _check_drift(
    admin: AIOKafkaAdminClient,
    settings: KafkaSettings,
    topics: TopicSettings,
    specs: list[TopicSpec],
    report: CatalogReport,
) -> None:
    names = [s.full_name(settings) for s in specs]
    described, configs = await _describe(admin, names)
    for s, name in zip(specs, names, strict=True):
        layout = topics.of(s.family)
        problems: list[str] = []
        placed = described.get(name, {}).get("partitions", [])
        if len(placed) != layout.partitions:
            problems.append(f"partitions {len(placed)} != catalog {layout.partitions}")
        replicas = min((len(p["replicas"]) for p in placed), default=0)
        if replicas != layout.replication_factor:
            problems.append(f"replication factor {replicas} != catalog {layout.replication_factor}")
        for key, want in s.configs(layout).items():
            have = configs.get(name, {}).get(key)
            if have != want:
                problems.append(f"{key} {have} != catalog {want}")
        if problems:
            report.drift[name] = problems
        else:
            report.unchanged.append(name)


async def _describe(
    admin: AIOKafkaAdminClient, names: list[str]
) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """Partitions and configs of topics. A topic created a moment ago can still be described
    without partitions or configs (the broker's metadata catches up asynchronously): ask again
    for a while rather than report drift that is not there."""
    deadline = time.monotonic() + _DESCRIBE_SETTLE_S
    while True:
        described = {t["topic"]: t for t in await admin.describe_topics(names)}
        resources = [ConfigResource(ConfigResourceType.TOPIC, n) for n in names]
        configs: dict[str, dict[str, str]] = {}
        for response in await admin.describe_configs(resources):
            for res in response.resources:
                # (error_code, error_message, resource_type, resource_name, config_entries)
                configs[res[3]] = {entry[0]: entry[1] for entry in res[4]}
        settled = all(described.get(n, {}).get("partitions") and configs.get(n) for n in names)
        if settled or time.monotonic() > deadline:
            return described, configs
        await asyncio.sleep(0.2)
