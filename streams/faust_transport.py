"""Faust's aiokafka transport with a configurable consumer fetch wait.

faust-streaming 0.15 hard-codes `fetch_max_wait_ms=1500` in its worker consumer, with no
setting: on a quiet partition every message can wait up to 1.5 s before Faust sees it. This
transport is the stock one except that the consumer it builds waits at most
`FETCH_MAX_WAIT_MS` (set from `CENTRALITY_STREAMS_FETCH_MAX_WAIT_MS` before the app starts).
Select it with the broker URL scheme `centrality-kafka://host:port`.
"""

from __future__ import annotations

from typing import Any

from faust.transport import drivers
from faust.transport.drivers import aiokafka as driver

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


class Transport(driver.Transport):
    Consumer = _Consumer


def install(fetch_max_wait_ms: int) -> str:
    """Register the transport; returns the URL scheme to use in `broker=`."""
    global FETCH_MAX_WAIT_MS
    FETCH_MAX_WAIT_MS = fetch_max_wait_ms
    drivers.TRANSPORTS.aliases[SCHEME] = f"{__name__}:Transport"
    return SCHEME
