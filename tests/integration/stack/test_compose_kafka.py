"""The compose file's Kafka settings, as the apache/kafka image turns them into server.properties,
accepted by the real broker's own configuration checks (its storage formatter builds the full
KafkaConfig: listeners, advertised listeners, protocol map, controller quorum)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from centrality.stack.kafka import LocalKafka
from centrality.stack.settings import StackSettings
from tests.support.compose import resolved

# The image's own entrypoint settings that are not broker properties (its propertiesSpec).
NOT_PROPERTIES = {"KAFKA_HEAP_OPTS", "KAFKA_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_JMX_OPTS"}
CLUSTER_ID = "5L6g3nShT-eMCtK--X86sw"  # the image's default CLUSTER_ID


def server_properties(environment: dict[str, Any]) -> dict[str, str]:
    """KAFKA_FOO_BAR → foo.bar, `__` → `_`, `___` → `-`: the apache/kafka image's rule."""
    props: dict[str, str] = {}
    for name, value in environment.items():
        if not name.startswith("KAFKA_") or name in NOT_PROPERTIES:
            continue
        key = name[len("KAFKA_") :].lower()
        key = key.replace("___", "\0").replace("__", "\1").replace("_", ".")
        props[key.replace("\0", "-").replace("\1", "_")] = str(value)
    return props


def format_storage(props: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    libs = LocalKafka(StackSettings()).ensure_jars()
    java = shutil.which("java")
    assert java, "Java 17 is needed for the local Kafka"
    config = tmp_path / "server.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return subprocess.run(
        [java, "-cp", f"{libs}/*", "kafka.tools.StorageTool", "format", "-t", CLUSTER_ID,
         "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip


@pytest.fixture
def kafka() -> dict[str, Any]:
    service: dict[str, Any] = resolved()["services"]["kafka"]
    return service


def test_the_broker_accepts_the_compose_listeners(kafka: dict[str, Any], tmp_path: Path) -> None:
    props = server_properties(kafka["environment"])
    # Kafka writes where the data volume is mounted, so the data outlives the container.
    [volume] = kafka["volumes"]
    assert props["log.dirs"] == volume["target"]
    result = format_storage({**props, "log.dirs": str(tmp_path / "data")}, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "data" / "meta.properties").is_file()


def test_the_broker_refuses_a_listener_it_cannot_map(kafka: dict[str, Any], tmp_path: Path) -> None:
    props = server_properties(kafka["environment"])
    # The slip that would leave host clients without a listener: HOST missing from the map.
    props["listener.security.protocol.map"] = "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    result = format_storage({**props, "log.dirs": str(tmp_path / "data")}, tmp_path)
    assert result.returncode != 0
    assert "No security protocol defined for listener HOST" in result.stderr
