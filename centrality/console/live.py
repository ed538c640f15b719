"""What the console shows, kept current: the status topic (`FleetReader`, as `centrality nodes
--watch` reads it) and the silences (`silence_cli.Book`, as `centrality silence list`), read
again every `refresh_s`. Each change bumps `version` and wakes the pages' feeds; a read that
fails marks the feed lost (the pages say so) until one succeeds again."""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from centrality.fleet import FleetReader
from centrality.silence_cli import Book
from schemas.fleet import Fleet
from schemas.settings import KafkaSettings
from schemas.topic_reader import Records, TopicReader
from schemas.topics import topic_name

log = structlog.get_logger("console.live")
BACKOFF_MAX_S = 5.0


class Live:
    def __init__(self, kafka: KafkaSettings, refresh_s: float) -> None:
        self.kafka = kafka
        self.refresh_s = refresh_s
        self._fleet_reader = FleetReader(kafka, client="console")
        self.book = Book()
        self._silences_changed = False
        self._silence_reader = TopicReader(
            kafka, topic_name("silences", kafka), self._take_silences, client_id="console-silences"
        )
        self.version = 0
        self.problem: str | None = None  # why the feed is lost; None: it is live
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    @property
    def fleet(self) -> Fleet:
        return self._fleet_reader.fleet

    def _take_silences(self, records: Records) -> None:
        self.book.take(records)
        self._silences_changed = self._silences_changed or bool(records)

    async def start(self) -> None:
        await self._fleet_reader.load()
        await self._silence_reader.load()
        self.version = 1
        self._task = asyncio.create_task(self._follow(), name="console-live")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._fleet_reader.stop()
        await self._silence_reader.stop()

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

    async def _read(self) -> None:
        fleet = self.fleet
        fleet.changed = False
        self._silences_changed = False
        await self._fleet_reader.refresh()
        await self._silence_reader.refresh()
        if fleet.changed or self._silences_changed:
            self.version += 1
            await self._notify()
