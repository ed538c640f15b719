"""The fleet `centrality bench incidents` plays: agents that say what their node is, then
heartbeat every `interval_s`, each at its own point of the interval as agents on their own
clocks do, until they all stop at once; and fatal XIDs raised on some of them within seconds."""

from __future__ import annotations

import asyncio
import random
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from collectors.events import Stamp
from collectors.gpu.fake import FakeGpuBackend
from collectors.simulate.runner import pause
from collectors.sink import EventSink
from schemas.envelope import Event
from schemas.events import GpuXidObserved, NodeFactsObserved, NodeHeartbeat
from schemas.events.gpus import GpuXidObservedPayload
from schemas.events.nodes import NodeHeartbeatPayload

FATAL_XID = 79  # GPU has fallen off the bus: the rules never wait on it
IN_FLIGHT = 256


def node_names(nodes: int) -> list[str]:
    return [f"gpu-{i:05d}" for i in range(nodes)]


@dataclass
class Agents:
    sink: EventSink
    names: Sequence[str]
    cluster: str
    interval_s: float
    gpus: int = 8
    heartbeats: int = 0  # sent so far
    stamp: Stamp = field(init=False)
    _slots: asyncio.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        self.stamp = Stamp(source="bench/agent", cluster=self.cluster)
        self._slots = asyncio.Semaphore(IN_FLIGHT)

    async def facts(self) -> None:
        """What each node is, as its agent says when it starts."""
        await self._send(
            self.stamp.make(NodeFactsObserved, name, FakeGpuBackend(self.gpus, seed=i).facts())
            for i, name in enumerate(self.names)
        )

    async def beat(self, stop: asyncio.Event) -> None:
        """Heartbeats until `stop` is set: a node's own second of every interval, always the
        same one (a part per second of the interval), so the fleet never beats at one instant."""
        slices = max(1, round(self.interval_s))
        parts: list[list[str]] = [[] for _ in range(slices)]
        for name in self.names:
            parts[zlib.crc32(name.encode()) % slices].append(name)
        began, k = time.monotonic(), 0
        while not stop.is_set():
            await self._send(self._heartbeat(name) for name in parts[k % slices])
            self.heartbeats += len(parts[k % slices])
            k += 1
            await pause(stop, began + k * self.interval_s / slices - time.monotonic())

    async def xids(self, nodes: Sequence[str], within_s: float, seed: int) -> float:
        """A fatal XID on each of `nodes`, at instants drawn over `within_s`; returns the
        monotonic time the first one was handed to the sink."""
        rng = random.Random(seed)
        at = sorted((rng.uniform(0, within_s), node) for node in nodes)
        began = time.monotonic()
        first: float | None = None
        for offset_s, node in at:
            await asyncio.sleep(max(0.0, began + offset_s - time.monotonic()))
            first = first or time.monotonic()
            gpu = zlib.crc32(node.encode()) % self.gpus
            payload = GpuXidObservedPayload(gpu=gpu, xid=FATAL_XID, message="fallen off the bus")
            await self.sink.emit_batch([self.stamp.make(GpuXidObserved, node, payload)])
        return first or began

    def _heartbeat(self, name: str) -> NodeHeartbeat:
        payload = NodeHeartbeatPayload(
            agent_version="bench", gpus=self.gpus, interval_s=self.interval_s
        )
        return self.stamp.make(NodeHeartbeat, name, payload)

    async def _send(self, events: Iterable[Event]) -> None:
        async def one(event: Event) -> None:
            async with self._slots:
                await self.sink.emit_batch([event])

        await asyncio.gather(*(one(e) for e in events))
