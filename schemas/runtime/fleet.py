"""The fleet as the streams app sees it now: its `status` and `incidents` topics read back whole.

One record per node, job and incident (the latest record of each key; a key lives on one
partition, so offset order is its order), exactly what the streams app's tables hold, as people
read it: `centrality nodes`, `incidents`, `centrality rules`' node counts, the console, and the
action worker's node groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from schemas.codec import DecodeError, decode
from schemas.envelope import Event
from schemas.events import JobStatusChanged, NodeStatusChanged
from schemas.events.incidents import INCIDENT_TYPES, IncidentEvent
from schemas.runtime.settings import KafkaSettings
from schemas.runtime.topic_reader import Records, TopicReader
from schemas.topics import topic_name

# Decoded first as these: the whole union builds every event model (~0.2 s of a listing).
STATUSES = (NodeStatusChanged, JobStatusChanged)


@dataclass(repr=False)
class Latest:
    """Each key's last record of a compacted topic, decoded once a read is done."""

    types: tuple[type[Event], ...]
    unreadable: int = 0  # records no reader of this version can decode (a newer writer's)
    changed: bool = False  # set by a settle that kept something: what `--watch` redraws on
    _unsettled: dict[bytes | None, bytes | None] = field(default_factory=dict)

    def take(self, records: Records) -> None:
        """Keeps each key's last record; `settle` decodes them once the read is done."""
        for record in records:
            self._unsettled[record.key] = record.value

    def settle(self) -> None:
        """Decodes what `take` kept: only each key's last record of the whole read, since a
        topic not compacted yet holds several, across fetches (half of a 10,000-node listing's
        decoding was of records a later one replaced)."""
        unsettled, self._unsettled = self._unsettled, {}
        for value in unsettled.values():
            try:
                events = decode(value or b"", self.types)
            except DecodeError:
                self.unreadable += 1
                continue
            for event in events:
                self.keep(event)
                self.changed = True

    def keep(self, event: Event) -> None:
        raise NotImplementedError


@dataclass(repr=False)
class Fleet(Latest):
    types: tuple[type[Event], ...] = STATUSES
    nodes: dict[str, NodeStatusChanged] = field(default_factory=dict)
    jobs: dict[str, JobStatusChanged] = field(default_factory=dict)

    def __repr__(self) -> str:
        # Cheap on purpose: asyncio.run reprs the task that returned it when it restores the
        # SIGINT handler (Python 3.11), and 10,000 statuses took 1.7 s to repr.
        return f"Fleet({len(self.nodes)} nodes, {len(self.jobs)} jobs)"

    def keep(self, event: Event) -> None:
        if isinstance(event, NodeStatusChanged):
            self.nodes[event.subject] = event
        elif isinstance(event, JobStatusChanged):
            self.jobs[event.subject] = event


@dataclass(repr=False)
class Incidents(Latest):
    types: tuple[type[Event], ...] = INCIDENT_TYPES
    incidents: dict[str, IncidentEvent] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Incidents({len(self.incidents)})"

    def keep(self, event: Event) -> None:
        if isinstance(event, IncidentEvent):
            self.incidents[event.subject] = event


class _View(Protocol):
    def take(self, records: Records) -> None: ...
    def settle(self) -> None: ...


V = TypeVar("V", bound=_View)


class ViewReader(Generic[V]):
    """Reads a compacted topic whole into `view` on `load`, then what changed on `refresh`."""

    def __init__(self, kafka: KafkaSettings, topic: str, view: V, client: str) -> None:
        self.view = view
        self._reader = TopicReader(
            kafka, topic_name(topic, kafka), view.take, client_id=f"{kafka.client_id}-{client}"
        )

    async def load(self) -> V:
        await self._reader.load()
        self.view.settle()
        return self.view

    async def refresh(self) -> V:
        await self._reader.refresh()
        self.view.settle()
        return self.view

    async def stop(self) -> None:
        await self._reader.stop()


class FleetReader(ViewReader[Fleet]):
    def __init__(self, kafka: KafkaSettings, client: str = "fleet") -> None:
        super().__init__(kafka, "status", Fleet(), client)

    @property
    def fleet(self) -> Fleet:
        return self.view


class IncidentReader(ViewReader[Incidents]):
    def __init__(self, kafka: KafkaSettings, client: str = "incidents") -> None:
        super().__init__(kafka, "incidents", Incidents(), client)


async def read_fleet(kafka: KafkaSettings) -> Fleet:
    return await _read(FleetReader(kafka))


async def read_incidents(kafka: KafkaSettings) -> Incidents:
    return await _read(IncidentReader(kafka))


async def _read(reader: ViewReader[V]) -> V:
    try:
        return await reader.load()
    finally:
        await reader.stop()
