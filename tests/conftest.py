"""Session fixtures: one real local stack (Kafka + ClickHouse) for the whole run.

If `CENTRALITY_KAFKA_BOOTSTRAP` / `CENTRALITY_CLICKHOUSE_URL` are set, those services are used
instead of starting ours. Nothing is ever skipped because a service is missing: starting it fails
the run loudly instead.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from centrality.stack.settings import StackSettings
from centrality.stack.stack import Stack
from schemas.runtime.admin import ensure_topics
from schemas.runtime.outages import OUTAGES
from schemas.runtime.settings import KafkaSettings
from streams.history.client import connect
from streams.history.migrations import migrate
from streams.history.settings import ClickHouseSettings
from tests.ports import free_ports
from tests.support.triggers import TRIGGER_KEY

# Scheduler test clusters, session-scoped: registered once here so every test shares one of each.
pytest_plugins = [
    "tests.support.slurm",
    "tests.support.ray",
    "tests.support.kube_api",
    "tests.support.kube_rbac",
    "tests.support.secured",
]


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    kafka_port, controller_port, clickhouse_port = free_ports(3)
    settings = StackSettings(
        state_dir=tmp_path_factory.mktemp("stack"),
        kafka_port=kafka_port,
        kafka_controller_port=controller_port,
        clickhouse_port=clickhouse_port,
    )
    stack = Stack(settings)
    stack.up()
    yield stack
    stack.down()


@pytest.fixture(autouse=True)
def no_outage_carried_over() -> Iterator[None]:
    """A worker run in this process watches Kafka and ClickHouse for the process's life: a
    dependency an earlier test left down would hold back the next test's library lines."""
    OUTAGES.forget()
    yield
    OUTAGES.forget()


@pytest.fixture
def unique() -> str:
    return uuid.uuid4().hex[:10]


@pytest.fixture
def kafka_settings(stack: Stack, unique: str) -> KafkaSettings:
    """Settings with a topic prefix of this test only, its catalog created."""
    settings = stack.kafka.model_copy(update={"topic_prefix": f"t{unique}."})
    asyncio.run(ensure_topics(settings))
    return settings


@pytest.fixture
def clickhouse_settings(stack: Stack, unique: str) -> Iterator[ClickHouseSettings]:
    """A database of this test only, migrated; dropped afterwards."""
    settings = stack.clickhouse.model_copy(update={"database": f"t_{unique}"})
    migrate(settings)
    yield settings
    with connect(settings, database="default") as client:
        client.command(f"DROP DATABASE IF EXISTS `{settings.database}`")


@pytest.fixture
def worker_env(
    stack: Stack,
    kafka_settings: KafkaSettings,
    clickhouse_settings: ClickHouseSettings,
    unique: str,
    tmp_path: Path,
) -> dict[str, str]:
    """Environment for worker processes of this test: its topics, database and groups."""
    return {
        **stack.env(),
        "CENTRALITY_KAFKA_TOPIC_PREFIX": kafka_settings.topic_prefix,
        "CENTRALITY_CLICKHOUSE_DATABASE": clickhouse_settings.database,
        "CENTRALITY_STREAMS_APP_ID": f"streams-{unique}",
        "CENTRALITY_TRIGGER_KEY": TRIGGER_KEY.get_secret_value(),
        "CENTRALITY_STREAMS_DATA_DIR": str(tmp_path / "streams"),
        "CENTRALITY_ACTIONS_GROUP_ID": f"actions-{unique}",
        "CENTRALITY_SINK_GROUP_ID": f"sink-{unique}",
        "CENTRALITY_SINK_BATCH_MAX_MS": "200",
    }


# One worker per session-wide service that is a machine's, not a port's (a Slurm cluster, Ray's
# head, Kubernetes' API server): `make test` runs two xdist workers with `--dist loadgroup`, and
# every test needing one of them goes to the same worker, which starts it once.
_GROUPS = {
    "slurm_cluster": "slurm",
    "kube_api": "kube",
    "kube_workers": "kube",
    "ray_head": "ray",
    "secured": "secured",
}

_LAYER_MARKS = {
    "static": pytest.mark.static,
    "integration": pytest.mark.integration,
    "e2e": pytest.mark.e2e,
    "browser": pytest.mark.browser,
}
_LAYERS = ("unit", *_LAYER_MARKS)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test carries the marker of its layer (unit: hermetic, `make test-unit`; static:
    checks of the project's own files and built artifacts, with the tools that read them); a test
    outside the five layers is a mistake, not a new layer."""
    root = Path(__file__).parent
    for item in items:
        layer = item.path.relative_to(root).parts[0] if item.path.is_relative_to(root) else ""
        if layer not in _LAYERS:
            raise pytest.UsageError(f"{item.nodeid}: tests live in {', '.join(_LAYERS)}/")
        if layer in _LAYER_MARKS:
            item.add_marker(_LAYER_MARKS[layer])
        groups = {_GROUPS[f] for f in getattr(item, "fixturenames", ()) if f in _GROUPS}
        if groups:
            item.add_marker(pytest.mark.xdist_group("+".join(sorted(groups))))
