"""What `centrality bench incidents` reads from the outside while the workers run: the fleet's
heartbeats and fatal XIDs as the broker appended them, what the status topic says of each node,
the incidents as they are published, the decisions and their results. Times are the records'
(LogAppendTime on the bench's topics), in seconds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer, ConsumerRecord

from centrality.bench.hostile_watch import Offsets, reader_at
from schemas.codec import DecodeError, decode
from schemas.envelope import Event
from schemas.events import (
    ActionFailed,
    ActionSucceeded,
    GpuXidObserved,
    NodeHeartbeat,
    NodeStatusChanged,
    Notify,
    QuarantineNodes,
)
from schemas.events.incidents import IncidentEvent, IncidentPayload, IncidentResolved
from schemas.runtime.settings import KafkaSettings
from streams.state.node import LOST_RULE

TOPICS = ("nodes", "status", "incidents", "triggers", "actions")
QUARANTINE = "quarantine_nodes"


@dataclass
class Seen:
    """Each node's latest heartbeat and first fatal XID; each change of state the status topic
    published (the first time a node showed unreachable, then in service again); incidents by
    id with when each opened and resolved; drains decided, done and refused."""

    last_beat_at: dict[str, float] = field(default_factory=dict)
    xid_at: dict[str, float] = field(default_factory=dict)
    state: dict[str, str] = field(default_factory=dict)  # each node's latest status
    unreachable_at: dict[str, float] = field(default_factory=dict)  # its latest silence's
    lost: Counter[str] = field(default_factory=Counter)  # silences per node
    back_at: dict[str, float] = field(default_factory=dict)  # in service after unreachable
    incidents: dict[str, IncidentPayload] = field(default_factory=dict)
    opened_at: dict[str, float] = field(default_factory=dict)
    resolved_at: dict[str, float] = field(default_factory=dict)
    quarantines: list[tuple[float, tuple[str, ...]]] = field(default_factory=list)
    notified: Counter[str] = field(default_factory=Counter)  # Notify triggers by rule
    lost_at: dict[str, float] = field(default_factory=dict)  # its latest heartbeat_lost decision
    drained_at: dict[str, float] = field(default_factory=dict)
    refused_at: dict[str, float] = field(default_factory=dict)
    refusals: Counter[str] = field(default_factory=Counter)  # the refusals' words

    def see(self, record: ConsumerRecord[bytes, bytes]) -> None:
        try:
            events = decode(record.value or b"")
        except DecodeError:
            return
        at = record.timestamp / 1000
        for event in events:
            self._see(event, at)

    def _see(self, e: Event, at: float) -> None:
        if isinstance(e, NodeHeartbeat):
            self.last_beat_at[e.subject] = at
        elif isinstance(e, GpuXidObserved):
            self.xid_at.setdefault(e.subject, at)
        elif isinstance(e, NodeStatusChanged):
            self._status(e.subject, e.payload.state, at)
        elif isinstance(e, IncidentEvent):
            self.incidents[e.subject] = e.payload
            self.opened_at.setdefault(e.subject, at)
            if isinstance(e, IncidentResolved):
                self.resolved_at[e.subject] = at
        elif isinstance(e, QuarantineNodes):
            self.quarantines.append((at, e.payload.nodes))
        elif isinstance(e, Notify):
            self.notified[e.payload.rule or "?"] += 1
            if e.payload.rule == LOST_RULE:
                self.lost_at.update(dict.fromkeys(e.payload.nodes, at))
        elif isinstance(e, ActionSucceeded) and e.payload.action == QUARANTINE:
            for node in e.payload.nodes:
                self.drained_at.setdefault(node, at)
        elif isinstance(e, ActionFailed) and e.payload.action == QUARANTINE and e.payload.refused:
            self.refusals[e.payload.error] += 1
            for node in e.payload.nodes:
                self.refused_at.setdefault(node, at)

    def _status(self, node: str, state: str, at: float) -> None:
        before, self.state[node] = self.state.get(node), state
        if state == "unreachable" and before != "unreachable":
            self.unreachable_at[node] = at
            self.lost[node] += 1
            self.back_at.pop(node, None)
        elif state == "in_service" and before == "unreachable":
            self.back_at[node] = at

    def decided_at(self, node: str) -> float | None:
        """When the node's drain was carried out or refused, whichever came first."""
        times = [t for t in (self.drained_at.get(node), self.refused_at.get(node)) if t]
        return min(times) if times else None

    def decided_s(self, node: str) -> float | None:
        """Seconds from the node's fatal XID to its drain carried out or refused."""
        at, decided = self.xid_at.get(node), self.decided_at(node)
        return None if at is None or decided is None else decided - at

    def quarantined_since(self, at: float, nodes: Iterable[str]) -> int:
        """QuarantineNodes decided since `at` naming any of `nodes`."""
        ours = set(nodes)
        return sum(1 for t, named in self.quarantines if t >= at and ours.intersection(named))

    def incidents_since(self, at: float) -> dict[str, IncidentPayload]:
        return {i: p for i, p in self.incidents.items() if self.opened_at[i] >= at}


class Watch:
    """Follows the bench's topics from given offsets into `Seen`."""

    def __init__(self, kafka: KafkaSettings, start: Offsets) -> None:
        self.kafka = kafka
        self.start = start
        self.seen = Seen()
        self._consumer: AIOKafkaConsumer | None = None

    async def poll(self) -> None:
        if self._consumer is None:
            self._consumer = await reader_at(self.kafka, self.start)
        for records in (await self._consumer.getmany(timeout_ms=100)).values():
            for record in records:
                self.seen.see(record)

    async def close(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()
