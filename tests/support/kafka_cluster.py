"""A three-node Kafka cluster on loopback, from the local stack's jars (`centrality.stack.kafka`).

Each node is broker and controller, and the three controllers form the quorum: the smallest
cluster that loses neither data nor its controller when any one node dies, and the layout of a
small production cluster. (One controller beside three brokers would be four JVMs on the test
machine, and its controller a single point of failure no deployment would keep; three
controllers beside three brokers, six JVMs.) A node killed with SIGKILL takes a voter with it,
the active controller perhaps: the two left elect one and move the partitions it led.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aiokafka import TopicPartition

from centrality.stack.kafka import LocalKafka, Quorum
from centrality.stack.process import ServiceError
from centrality.stack.settings import StackSettings
from schemas.runtime import kafka_clients
from schemas.runtime.settings import KafkaSettings
from tests.ports import free_ports

_HEAP_MB = 256  # three on a CI box, beside the workers and ClickHouse
_STOP_S = 3.0


class KafkaCluster:
    def __init__(self, root: Path, size: int = 3) -> None:
        ports = free_ports(2 * size)
        clients, controllers = ports[:size], ports[size:]
        quorum = Quorum.of(controllers)
        self.nodes = {
            node_id: LocalKafka(
                StackSettings(
                    state_dir=root / f"node-{node_id}",
                    kafka_port=clients[node_id - 1],
                    kafka_controller_port=port,
                    kafka_heap_mb=_HEAP_MB,
                ),
                node_id=node_id,
                quorum=quorum,
            )
            for node_id, port in quorum.controllers.items()
        }

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes.values())

    def settings(self, **update: Any) -> KafkaSettings:
        return KafkaSettings(bootstrap=self.bootstrap).model_copy(update=update)

    def start(self, timeout_s: float = 120.0) -> None:
        """Every node launched, then each ready, then every broker registered."""
        started = time.monotonic()
        for node in self.nodes.values():
            node.launch()
        for node in self.nodes.values():
            node.wait_ready(started)
        asyncio.run(self._wait_for_brokers(set(self.nodes), timeout_s))

    def stop(self) -> None:
        """Not waiting long for a controlled shutdown: once the quorum has lost its majority
        (a node killed, another stopped), the last node's would wait for it for good."""
        for node in self.nodes.values():
            node.stop(timeout_s=_STOP_S)

    def kill(self, node_id: int) -> None:
        """kill -9: no controlled shutdown, no flush; returns once the process is gone."""
        node = self.nodes[node_id]
        pid = node.pid()
        assert pid is not None, f"node {node_id} is not running"
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while node.running():
            assert time.monotonic() < deadline, f"node {node_id} survived SIGKILL"
            time.sleep(0.05)

    def alive(self) -> list[int]:
        return [node_id for node_id, node in self.nodes.items() if node.running()]

    async def leaders(self, topics: Iterable[str]) -> dict[TopicPartition, int]:
        """The leader of every partition of `topics` (Kafka names), as the cluster says now."""
        admin = kafka_clients.admin(self.settings())
        await admin.start()
        try:
            described: list[dict[str, Any]] = await admin.describe_topics(list(topics))
        finally:
            await admin.close()
        return {
            TopicPartition(topic["topic"], partition["partition"]): partition["leader"]
            for topic in described
            for partition in topic["partitions"]
        }

    async def _wait_for_brokers(self, expected: set[int], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        seen: set[int] = set()
        while time.monotonic() < deadline:
            admin = kafka_clients.admin(self.settings(), request_timeout_ms=5000)
            try:
                await admin.start()
                cluster = await admin.describe_cluster()
                seen = {int(broker["node_id"]) for broker in cluster["brokers"]}
                if seen == expected:
                    return
            except Exception:  # not up yet: asked again
                pass
            finally:
                await admin.close()
            await asyncio.sleep(0.5)
        raise ServiceError(f"brokers {sorted(seen)} of {sorted(expected)} after {timeout_s}s")
