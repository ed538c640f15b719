"""The compose file's Kafka settings, as the apache/kafka image turns them into server.properties:
accepted by the real broker's own configuration checks (its storage formatter builds the full
KafkaConfig: listeners, advertised listeners, protocol map, controller quorum), and, run by the
real broker, serving a client on the host through the published listener."""

from __future__ import annotations

import re
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.client import AIOKafkaClient

from centrality.stack.kafka import LocalKafka
from centrality.stack.settings import StackSettings
from tests.ports import free_ports
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


class ComposeKafka(LocalKafka):
    """The project's local broker runner, started with the compose file's properties."""

    def __init__(self, settings: StackSettings, props: dict[str, str]) -> None:
        super().__init__(settings)
        self.props = props

    def write_config(self) -> None:
        super().write_config()  # directories and logging as for the local stack
        props = {**self.props, "log.dirs": str(self.data_dir)}
        self.config_file.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


async def advertised(bootstrap: str) -> list[tuple[str, int]]:
    """Where the broker tells a client that bootstrapped from `bootstrap` to connect (the
    metadata of the bootstrap connection itself, before connecting anywhere else)."""
    client = AIOKafkaClient(bootstrap_servers=bootstrap)
    await client.bootstrap()
    try:
        return [(b.host, b.port) for b in client.cluster.brokers()]
    finally:
        await client.close()


async def test_a_host_client_produces_through_the_published_port(tmp_path: Path) -> None:
    internal, published, controller = free_ports(3)
    kafka = resolved({"KAFKA_HOST_PORT": str(published)})["services"]["kafka"]
    props = server_properties(kafka["environment"])
    [port] = kafka["ports"]
    # No Docker here, so no port mapping: the listener behind the published port binds it
    # itself, the in-network one and the controller move to free ports, all on loopback.
    moved = {str(port["target"]): str(published), "9092": str(internal), "9093": str(controller)}
    props["listeners"] = re.sub(
        r"://:(\d+)", lambda m: f"://127.0.0.1:{moved[m[1]]}", props["listeners"]
    )
    props["advertised.listeners"] = props["advertised.listeners"].replace(
        "kafka:9092", f"kafka:{internal}"
    )
    # `kafka` resolves to the container itself inside the compose network.
    props["controller.quorum.voters"] = f"1@127.0.0.1:{controller}"
    settings = StackSettings(
        state_dir=tmp_path,
        host="127.0.0.1",
        kafka_port=published,
        kafka_controller_port=controller,
        kafka_heap_mb=256,
        start_timeout_s=120,
    )
    broker = ComposeKafka(settings, props)
    broker.start()
    try:
        host_bootstrap = f"127.0.0.1:{published}"
        assert await advertised(host_bootstrap) == [("127.0.0.1", published)]
        # The in-network listener sends a host client to `kafka`, which only containers resolve
        # (all the file offered before).
        assert await advertised(f"127.0.0.1:{internal}") == [("kafka", internal)]

        topic = f"compose-host-{uuid.uuid4().hex[:8]}"
        admin = AIOKafkaAdminClient(bootstrap_servers=host_bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
        finally:
            await admin.close()
        producer = AIOKafkaProducer(bootstrap_servers=host_bootstrap, acks="all")
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"from the host", key=b"node-1")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=host_bootstrap, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            record = await consumer.getone()
        finally:
            await consumer.stop()
        assert (record.key, record.value) == (b"node-1", b"from the host")
    finally:
        broker.stop()
