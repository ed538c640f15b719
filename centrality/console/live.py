"""What the console shows, kept current: the status and incidents topics (`FleetReader`,
`IncidentReader`, as `centrality nodes --watch` and `centrality incidents` read them), the
silences (`silence_cli.Book`, as `centrality silence list`) and what the incident teller told
(its `Told` records in the action ledger), read again every `refresh_s`. Each change bumps
`version` and wakes the pages' feeds; a read that fails marks the feed lost (the pages say so)
until one succeeds again."""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from actions.ledger import Told
from centrality.fleet import FleetReader
from centrality.silence_cli import Book
from schemas.events.incidents import IncidentEvent
from schemas.runtime.fleet import Fleet, IncidentReader
from schemas.runtime.settings import KafkaSettings
from schemas.runtime.topic_reader import Records, TopicReader
from schemas.topics import topic_name

log = structlog.get_logger("console.live")
BACKOFF_MAX_S = 5.0


class Live:
    def __init__(self, kafka: KafkaSettings, refresh_s: float) -> None:
        self.kafka = kafka
        self.refresh_s = refresh_s
        self._fleet_reader = FleetReader(kafka, client="console")
        self.book = Book()
        self._others_changed = False
        self._silence_reader = TopicReader(
            kafka, topic_name("silences", kafka), self._take_silences, client_id="console-silences"
        )
        self._incident_reader = IncidentReader(kafka, client="console-incidents")
        self.told: dict[str, Told] = {}
        self._ledger_reader = TopicReader(
            kafka, topic_name("action-ledger", kafka), self._take_told, client_id="console-told"
        )
        self.version = 0
        self.problem: str | None = None  # why the feed is lost; None: it is live
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    @property
    def fleet(self) -> Fleet:
        return self._fleet_reader.fleet

    @property
    def incidents(self) -> dict[str, IncidentEvent]:
        return self._incident_reader.view.incidents

    def _take_silences(self, records: Records) -> None:
        self.book.take(records)
        self._others_changed = self._others_changed or bool(records)

    def _take_told(self, records: Records) -> None:
        """Only what was told: the ledger's other records (one per action) are not decoded."""
        for record in records:
            if not (record.key or b"").startswith(b"told/") or not record.value:
                continue
            try:
                told = Told.model_validate_json(record.value)
            except ValueError:
                continue
            self.told[told.incident] = told
            self._others_changed = True  # anything new makes a new version

    async def start(self) -> None:
        for reader in self._readers:
            await reader.load()
        self.version = 1
        self._task = asyncio.create_task(self._follow(), name="console-live")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for reader in self._readers:
            await reader.stop()

    async def wait(self, seen: tuple[int, str | None], timeout_s: float) -> None:
        """Returns once the version or the feed's state is not `seen`, or after `timeout_s`."""
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._changed.wait_for(lambda: (self.version, self.problem) != seen),
                    timeout_s,
                )

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _follow(self) -> None:
        pause_s = self.refresh_s
        while True:
            await asyncio.sleep(pause_s)
            try:
                await self._read()
            except Exception as exc:  # Kafka away: the pages say so, and reading goes on
                if self.problem is None:
                    log.warning("console_feed_lost", error=f"{type(exc).__name__}: {exc}")
                self.problem = f"the status topic cannot be read: {type(exc).__name__}: {exc}"
                pause_s = min(BACKOFF_MAX_S, pause_s * 2)
                await self._notify()
                continue
            pause_s = self.refresh_s
            if self.problem is not None:
                log.info("console_feed_back")
                self.problem = None
                await self._notify()

    @property
    def _readers(self) -> tuple[FleetReader | IncidentReader | TopicReader, ...]:
        return (
            self._fleet_reader,
            self._incident_reader,
            self._silence_reader,
            self._ledger_reader,
        )

    async def _read(self) -> None:
        views = (self.fleet, self._incident_reader.view)
        for view in views:
            view.changed = False
        self._others_changed = False
        for reader in self._readers:
            await reader.refresh()
        if any(view.changed for view in views) or self._others_changed:
            self.version += 1
            await self._notify()
