"""Faust's aiokafka transport with two small, documented fixes. Select it with the broker URL
scheme `centrality-kafka://host:port` (see `install`).

1. Fetch wait. faust-streaming 0.15 hard-codes `fetch_max_wait_ms=1500` in its worker consumer,
   with no setting: on a quiet partition every message can wait up to 1.5 s before Faust sees it.
   Our consumer waits at most `FETCH_MAX_WAIT_MS` (`CENTRALITY_STREAMS_FETCH_MAX_WAIT_MS`).

2. Flush before commit. Table changelog records first go to Faust's own producer buffer. Before
   committing offsets Faust flushes the producer, but its buffer flush gives up after 0.1 s
   without progress even if records are still waiting; offsets can then be committed ahead of
   the changelog, and a worker killed at that moment loses table state for good. Our producer's
   flush drains that buffer completely before flushing aiokafka.

3. A sender that survives errors. The buffer's one sender task ends at the first failed send
   (a broker hiccup while the worker rejoins after a restart, say), and from then on every table
   change stays in the buffer and never reaches the changelog, while direct sends still work.
   Ours retries the same record with backoff, so order holds and nothing is dropped.

4. Drain before stopping. On a clean stop Faust stops the aiokafka producer first and the
   buffer after it, so table changes still in the buffer were dropped (their offsets may be
   committed by then): the last moments before every SIGTERM were lost from the changelog. Our
   producer drains the buffer while it can still send.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from faust.transport import drivers
from faust.transport.drivers import aiokafka as driver
from faust.transport.producer import ProducerBuffer
from mode import Service

log = structlog.get_logger("streams")

SCHEME = "centrality-kafka"
FETCH_MAX_WAIT_MS = 20


class _ConsumerThread(driver.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # aiokafka keeps the value and hands it to its Fetcher in start(), which comes later.
        consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS
        return consumer


class _Consumer(driver.Consumer):
    def _new_consumer_thread(self) -> driver.AIOKafkaConsumerThread:
        return _ConsumerThread(self, loop=self.loop, beacon=self.beacon)


class _Buffer(ProducerBuffer):
    @Service.task
    async def _handle_pending(self) -> None:
        while not self.should_stop:
            message = await self.pending.get()
            backoff_s = 0.1
            while True:
                try:
                    await self._send_pending(message)
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.warning("changelog_send_retry", error=repr(exc), retry_in_s=backoff_s)
                    await asyncio.sleep(backoff_s)
                    backoff_s = min(backoff_s * 2, 5.0)
            self.message_sent.set()


class _Producer(driver.Producer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        buffer = _Buffer(loop=self.loop, beacon=self.beacon)
        buffer.app, buffer.threaded_producer = self.app, self.threaded_producer
        self.buffer = buffer

    async def on_stop(self) -> None:
        await self.flush()
        await super().on_stop()

    async def flush(self) -> None:
        while self.buffer.size:
            await self.buffer.flush()
            await asyncio.sleep(0)  # let the buffer's sender hand its last record to aiokafka
        await super().flush()


class Transport(driver.Transport):
    Consumer = _Consumer
    Producer = _Producer


def install(fetch_max_wait_ms: int) -> str:
    """Register the transport; returns the URL scheme to use in `broker=`."""
    global FETCH_MAX_WAIT_MS
    FETCH_MAX_WAIT_MS = fetch_max_wait_ms
    drivers.TRANSPORTS.aliases[SCHEME] = f"{__name__}:Transport"
    return SCHEME
