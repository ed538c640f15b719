"""What became of a command: its action result, or the dead letter that refused it.

The reader is positioned at the ends of the `actions` and `deadletter` topics before the command
is sent, so whatever answers it is seen, however fast.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self

from aiokafka import AIOKafkaConsumer, TopicPartition

from schemas.codec import DecodeError, decode
from schemas.deadletter import DeadLetter
from schemas.events import ActionFailed, ActionHeld, ActionSucceeded
from schemas.runtime import kafka_clients
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name

# `unchanged`: nothing was sent, as nothing was to be done (a release of nodes in service).
Verdict = Literal["succeeded", "unchanged", "failed", "refused", "held", "dead-lettered"]


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    words: str  # what was done, or why not
    detail: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.verdict in ("succeeded", "unchanged")


class OutcomeWatch:
    def __init__(self, kafka: KafkaSettings) -> None:
        self.actions = topic_name("actions", kafka)
        self.deadletter = topic_name("deadletter", kafka)
        self._consumer: AIOKafkaConsumer = kafka_clients.consumer(
            kafka, client_id=f"{kafka.client_id}-outcome", enable_auto_commit=False
        )

    async def __aenter__(self) -> Self:
        await self._consumer.start()
        partitions = [
            TopicPartition(topic, p)
            for topic in (self.actions, self.deadletter)
            for p in self._consumer.partitions_for_topic(topic)
            or await _partitions(self._consumer, topic)
        ]
        self._consumer.assign(partitions)
        await self._consumer.seek_to_end(*partitions)
        for tp in partitions:  # settle the positions now: later records are what answers
            await self._consumer.position(tp)
        return self

    async def __aexit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        await self._consumer.stop()

    async def outcome(self, trigger_id: uuid.UUID, timeout_s: float) -> Outcome | None:
        """The answer to `trigger_id`, or None when none came within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        needle = str(trigger_id).encode()
        while (left := deadline - time.monotonic()) > 0:
            fetched = await self._consumer.getmany(timeout_ms=int(min(left, 0.5) * 1000))
            for tp, records in fetched.items():
                for record in records:
                    found = self._answer(tp.topic, record.value or b"", trigger_id, needle)
                    if found is not None:
                        return found
        return None

    def _answer(
        self, topic: str, value: bytes, trigger_id: uuid.UUID, needle: bytes
    ) -> Outcome | None:
        if topic == self.deadletter:  # the raw bytes travel in base64: read the letter first
            try:
                letter = DeadLetter.from_bytes(value)
            except ValueError:
                return None
            if needle not in letter.raw:
                return None
            return Outcome("dead-lettered", f"{letter.reason}: {letter.detail}", {})
        if needle not in value:
            return None
        try:
            events = decode(value)
        except DecodeError:
            return None
        for event in events:
            if isinstance(event, ActionSucceeded) and event.payload.trigger_id == trigger_id:
                return Outcome("succeeded", event.payload.action, dict(event.payload.detail))
            if isinstance(event, ActionHeld) and event.payload.trigger_id == trigger_id:
                return Outcome("held", event.payload.said, {})
            if isinstance(event, ActionFailed) and event.payload.trigger_id == trigger_id:
                p = event.payload
                verdict: Verdict = "held" if p.held_by else "refused" if p.refused else "failed"
                return Outcome(verdict, p.error, {})
        return None


async def _partitions(consumer: AIOKafkaConsumer, topic: str) -> set[int]:
    """A topic's partitions once the client's metadata knows them (or a clear error)."""
    for _ in range(50):
        await consumer._client.force_metadata_update()  # no public way to ask for one topic
        found: set[int] | None = consumer.partitions_for_topic(topic)
        if found:
            return found
        await asyncio.sleep(0.1)
    raise RuntimeError(f"topic {topic} is missing; run `centrality up`")
