"""Sending the storm through every codec: aiokafka (uncompressed and gzip) and librdkafka
(confluent-kafka: none, gzip, snappy, lz4, zstd), round robin, each delivery counted.

Client-side limits are raised so that the broker, not our producer, decides what is too large;
what it refuses is counted per kind, never retried.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from centrality.bench.hostile_storm import TOPICS, Hostile
from schemas.runtime import kafka_clients
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name

CODECS = (
    "aiokafka:none",
    "aiokafka:gzip",
    "librdkafka:none",
    "librdkafka:gzip",
    "librdkafka:snappy",
    "librdkafka:lz4",
    "librdkafka:zstd",
)
CLIENT_MAX_BYTES = 16 * 1024 * 1024


@dataclass
class Sent:
    by_kind: Counter[str] = field(default_factory=Counter)
    by_codec: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)  # "kind: error"
    pending: int = 0
    send_s: float = 0.0

    def delivered(self, kind: str, codec: str, error: str | None) -> None:
        self.pending -= 1
        if error is None:
            self.by_kind[kind] += 1
            self.by_codec[codec] += 1
        else:
            self.refused[f"{kind}: {error}"] += 1

    def summary(self) -> dict[str, Any]:
        return {
            "total": sum(self.by_kind.values()),
            "by_kind": dict(sorted(self.by_kind.items())),
            "by_codec": dict(sorted(self.by_codec.items())),
            "refused": dict(sorted(self.refused.items())),
        }


def _librdkafka() -> Any:
    try:
        import confluent_kafka
    except ImportError as exc:  # a test extra: the bench needs a producer nobody here wrote
        raise SystemExit(
            "centrality bench hostile needs confluent-kafka (pip install 'centrality[test]')"
        ) from exc
    return confluent_kafka


class Senders:
    """One producer per codec; `send` takes the next codec in turn unless the message names one."""

    def __init__(self, kafka: KafkaSettings) -> None:
        self.kafka = kafka
        self.sent = Sent()
        self._aio: dict[str, AIOKafkaProducer] = {}
        self._rd: dict[str, Any] = {}
        self._turn = 0
        self._names = {t: topic_name(t, kafka) for t in TOPICS}

    async def start(self) -> None:
        confluent = _librdkafka()
        for codec in CODECS:
            client, compression = codec.split(":")
            if client == "aiokafka":
                producer = kafka_clients.producer(
                    self.kafka,
                    acks=1,  # hostile records are refused on purpose: no need to wait for all
                    compression_type=None if compression == "none" else compression,
                    max_request_size=CLIENT_MAX_BYTES,
                    linger_ms=20,
                )
                await producer.start()
                self._aio[codec] = producer
            else:
                self._rd[codec] = confluent.Producer(
                    {
                        **kafka_clients.librdkafka_config(self.kafka),
                        "compression.type": compression,
                        "message.max.bytes": CLIENT_MAX_BYTES,
                        "linger.ms": 20,
                        "partitioner": "murmur2_random",  # placement is explicit anyway
                    }
                )

    async def send(self, message: Hostile) -> None:
        codec = message.codec
        if codec is None:
            codec = CODECS[self._turn % len(CODECS)]
            self._turn += 1
        if message.key is None and message.value is None and codec in self._aio:
            codec = "librdkafka:none"  # aiokafka refuses a record with neither
        topic = self._names[message.topic]
        headers = list(message.headers)
        self.sent.pending += 1
        if codec in self._aio:
            await self._send_aio(codec, topic, message, headers)
        else:
            self._send_rd(codec, topic, message, headers)

    async def _send_aio(
        self, codec: str, topic: str, message: Hostile, headers: list[tuple[str, bytes]]
    ) -> None:
        try:
            delivery = await self._aio[codec].send(
                topic, message.value, key=message.key, partition=message.partition, headers=headers
            )
        except (KafkaError, ValueError, TypeError) as exc:
            self.sent.delivered(message.kind, codec, type(exc).__name__)
            return

        def done(fut: asyncio.Future[Any]) -> None:
            exc = fut.exception() if not fut.cancelled() else None
            self.sent.delivered(message.kind, codec, type(exc).__name__ if exc else None)

        delivery.add_done_callback(done)

    def _send_rd(
        self, codec: str, topic: str, message: Hostile, headers: list[tuple[str, bytes]]
    ) -> None:
        producer = self._rd[codec]

        def done(err: Any, _msg: Any) -> None:
            self.sent.delivered(message.kind, codec, err.name() if err else None)

        while True:
            try:
                producer.produce(
                    topic,
                    message.value,
                    message.key,
                    partition=message.partition,
                    headers=headers,
                    on_delivery=done,
                )
                return
            except BufferError:  # its queue is full: serve callbacks until there is room
                producer.poll(0.05)
            except Exception as exc:  # refused before it left (e.g. too large for the client)
                self.sent.delivered(message.kind, codec, type(exc).__name__)
                return

    async def send_all(self, messages: Iterable[Hostile]) -> None:
        started = time.perf_counter()
        for i, message in enumerate(messages):
            await self.send(message)
            if i % 1000 == 999:
                for producer in self._rd.values():
                    producer.poll(0)
                await asyncio.sleep(0)  # let aiokafka's sender run
        await self.flush()
        self.sent.send_s = time.perf_counter() - started

    async def flush(self) -> None:
        for aio in self._aio.values():
            await aio.flush()
        for producer in self._rd.values():
            producer.flush(60)  # in this thread: its delivery callbacks count into `sent`
        deadline = time.monotonic() + 30
        while self.sent.pending > 0 and time.monotonic() < deadline:
            for producer in self._rd.values():
                producer.poll(0)
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        for aio in self._aio.values():
            await aio.stop()
        self._aio.clear()
        self._rd.clear()
