"""Consumer lag of an aiokafka consumer group, as `centrality_consumer_lag`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import structlog
from aiokafka import AIOKafkaConsumer, TopicPartition

from schemas.runtime.metrics.catalog import CONSUMER_LAG

log = structlog.get_logger("metrics")


async def partition_lags(consumer: AIOKafkaConsumer) -> dict[TopicPartition, int]:
    """Messages on each assigned partition not committed yet (processed or not)."""
    partitions = list(consumer.assignment())
    if not partitions:
        return {}
    ends = await consumer.end_offsets(partitions)
    starts = await consumer.beginning_offsets(partitions)
    lags = {}
    for tp in partitions:
        committed = await consumer.committed(tp)  # cached for assigned partitions
        lags[tp] = max(0, ends[tp] - (starts[tp] if committed is None else committed))
    return lags


_reported: dict[str, set[tuple[str, str]]] = {}


def report_lag(group: str, lags: dict[TopicPartition, int]) -> None:
    """Set the group's gauges; partitions no longer assigned stop being reported."""
    now = {(tp.topic, str(tp.partition)) for tp in lags}
    for topic, partition in _reported.get(group, set()) - now:
        CONSUMER_LAG.remove(group, topic, partition)
    for tp, lag in lags.items():
        CONSUMER_LAG.labels(group, tp.topic, str(tp.partition)).set(lag)
    _reported[group] = now


@contextlib.asynccontextmanager
async def sampling_lag(
    consumer: AIOKafkaConsumer, group: str, interval_s: float = 10.0
) -> AsyncIterator[None]:
    """The group's lag sampled beside the block, not in it: asking the broker for end offsets
    may take a while when it is away, and must not hold up the work."""

    async def sample_forever() -> None:
        while True:
            try:
                report_lag(group, await partition_lags(consumer))
            except Exception as exc:  # the broker away, a rebalance: the next sample will do
                log.debug("lag_sample_failed", group=group, error=repr(exc))
            await asyncio.sleep(interval_s)

    task = asyncio.create_task(sample_forever())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
