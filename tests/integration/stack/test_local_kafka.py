"""The embedded broker is real Kafka: acknowledged data survives kill -9, and it stops cleanly."""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from centrality.stack.kafka import LocalKafka, wait_ready
from centrality.stack.process import port_open
from centrality.stack.settings import StackSettings
from schemas.runtime.settings import KafkaSettings
from tests.ports import free_ports

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

HOST = "127.0.0.1"


def _gone(pid: int, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # Our own dead child stays a zombie until reaped.
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafka]:
    kafka_port, controller_port = free_ports(2)
    # The default cache dir is kept, so the jars are fetched once per machine, not per run.
    settings = StackSettings(
        state_dir=Path(tmp_path_factory.mktemp("stack")),
        host=HOST,
        kafka_port=kafka_port,
        kafka_controller_port=controller_port,
        kafka_heap_mb=512,
    )
    broker = LocalKafka(settings)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


async def _create_topic(bootstrap: str, name: str, partitions: int = 3) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    finally:
        await admin.close()


async def _consume_all(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=f"test-{uuid.uuid4().hex}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    values: list[bytes] = []
    try:
        deadline = time.monotonic() + 60
        while len(values) < expected and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=1000)
            for records in batches.values():
                values.extend(r.value for r in records if r.value is not None)
    finally:
        await consumer.stop()
    return values


async def test_acknowledged_messages_survive_kill_9(kafka: LocalKafka) -> None:
    topic = f"test-durable-{uuid.uuid4().hex[:8]}"
    await _create_topic(kafka.bootstrap, topic)
    sent = [f"message-{i}".encode() for i in range(100)]
    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap, acks="all")
    await producer.start()
    try:
        for i, value in enumerate(sent):
            await producer.send_and_wait(topic, value, key=str(i % 7).encode())
    finally:
        await producer.stop()

    pid = kafka.pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert _gone(pid)
    assert not kafka.running()

    kafka.start()
    assert kafka.running()
    assert kafka.pid() != pid

    received = await _consume_all(kafka.bootstrap, topic, expected=len(sent))
    assert sorted(received) == sorted(sent)


async def test_wait_ready_on_a_running_broker(kafka: LocalKafka) -> None:
    await wait_ready(KafkaSettings(bootstrap=kafka.bootstrap), timeout_s=10)


def test_start_twice_is_a_noop(kafka: LocalKafka) -> None:
    pid = kafka.pid()
    assert pid is not None
    kafka.start()
    kafka.start()
    assert kafka.pid() == pid


def test_stop_leaves_nothing_behind(kafka: LocalKafka) -> None:
    pid = kafka.pid()
    assert pid is not None
    assert kafka.stop()
    assert _gone(pid, timeout_s=1)
    assert not kafka.running()
    assert not kafka.process.pid_file.exists()
    assert not port_open(HOST, kafka.settings.kafka_port)
    assert not port_open(HOST, kafka.settings.kafka_controller_port)
    assert not kafka.stop()


async def test_restart_on_new_ports_keeps_data(kafka: LocalKafka) -> None:
    """Ports are config, not identity: the same state dir must come up on other ports."""
    kafka.start()
    topic = f"test-ports-{uuid.uuid4().hex[:8]}"
    await _create_topic(kafka.bootstrap, topic, partitions=1)
    kafka.stop()
    kafka_port, controller_port = free_ports(2)
    kafka.settings.kafka_port = kafka_port
    kafka.settings.kafka_controller_port = controller_port
    kafka.start()
    assert kafka.bootstrap == f"{HOST}:{kafka_port}"
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    await admin.start()
    try:
        assert topic in await admin.list_topics()
    finally:
        await admin.close()
