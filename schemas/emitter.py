"""The Emitter: the one Kafka producer that collectors, actions and bespoke setups use."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Self

from aiokafka import AIOKafkaProducer

from schemas.codec import encode, encode_batch
from schemas.deadletter import DeadLetter
from schemas.envelope import Event
from schemas.settings import KafkaSettings
from schemas.topics import topic_name
from schemas.tracing import inject_headers


class Emitter:
    """Async producer of contract events: idempotent, keyed by subject, trace context in headers.

    Use as `async with Emitter(settings) as emitter: await emitter.emit(event)`.
    """

    def __init__(self, settings: KafkaSettings | None = None, *, linger_ms: int = 5) -> None:
        self.settings = settings or KafkaSettings()
        self._producer = AIOKafkaProducer(
            bootstrap_servers=self.settings.bootstrap,
            client_id=self.settings.client_id,
            enable_idempotence=True,
            acks="all",
            linger_ms=linger_ms,
            compression_type=None,
        )

    async def __aenter__(self) -> Self:
        await self._producer.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._producer.stop()

    async def emit(self, event: Event) -> None:
        """Send one event and wait until the broker has it."""
        await self._send(event, encode(event))

    async def emit_batch(self, events: Sequence[Event]) -> None:
        """Send events of one subject as one message (high-volume families travel this way)."""
        await self._send(events[0], encode_batch(events))

    async def dead_letter(self, letter: DeadLetter) -> None:
        """Park a message no consumer could decode, keyed by its source topic."""
        await self._producer.send_and_wait(
            topic_name("deadletter", self.settings),
            value=letter.to_bytes(),
            key=letter.topic.encode(),
        )

    async def _send(self, first: Event, value: bytes) -> None:
        await self._producer.send_and_wait(
            topic_name(first.topic, self.settings),
            value=value,
            key=first.key,
            headers=inject_headers(),
        )

    async def flush(self) -> None:
        await self._producer.flush()
