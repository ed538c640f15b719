"""The fleet as the streams app sees it now: its `status` topic read back whole.

One status per node and job (the latest record of each key; a subject lives on one partition,
so offset order is its order), exactly what the streams app's tables hold, as people read it:
`centrality nodes`, `centrality rules`' node counts, and the action worker's node groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas.codec import DecodeError, decode
from schemas.events import JobStatusChanged, NodeStatusChanged
from schemas.settings import KafkaSettings
from schemas.topic_reader import Records, TopicReader
from schemas.topics import topic_name

# Decoded first as these: the whole union builds every event model (~0.2 s of a listing).
STATUSES = (NodeStatusChanged, JobStatusChanged)


@dataclass(repr=False)
class Fleet:
    nodes: dict[str, NodeStatusChanged] = field(default_factory=dict)
    jobs: dict[str, JobStatusChanged] = field(default_factory=dict)
    unreadable: int = 0  # records no reader of this version can decode (a newer writer's)
    changed: bool = False  # since `reset_changed`: what `--watch` redraws on
    _unsettled: dict[bytes | None, bytes | None] = field(default_factory=dict)

    def __repr__(self) -> str:
        # Cheap on purpose: asyncio.run reprs the task that returned it when it restores the
        # SIGINT handler (Python 3.11), and 10,000 statuses took 1.7 s to repr.
        return f"Fleet({len(self.nodes)} nodes, {len(self.jobs)} jobs)"

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
                events = decode(value or b"", STATUSES)
            except DecodeError:
                self.unreadable += 1
                continue
            for event in events:
                if isinstance(event, NodeStatusChanged):
                    self.nodes[event.subject] = event
                elif isinstance(event, JobStatusChanged):
                    self.jobs[event.subject] = event
                self.changed = True


class FleetReader:
    """Reads the status topic whole on `load`, then what changed on each `refresh`."""

    def __init__(self, kafka: KafkaSettings, client: str = "fleet") -> None:
        self.fleet = Fleet()
        self._reader = TopicReader(
            kafka,
            topic_name("status", kafka),
            self.fleet.take,
            client_id=f"{kafka.client_id}-{client}",
        )

    async def load(self) -> Fleet:
        await self._reader.load()
        self.fleet.settle()
        return self.fleet

    async def refresh(self) -> Fleet:
        await self._reader.refresh()
        self.fleet.settle()
        return self.fleet

    async def stop(self) -> None:
        await self._reader.stop()


async def read_fleet(kafka: KafkaSettings) -> Fleet:
    reader = FleetReader(kafka)
    try:
        return await reader.load()
    finally:
        await reader.stop()
