"""Produce batches whose lifetime does not run while the whole Kafka cluster is away (fix 13).

aiokafka fails a batch the broker has not acknowledged within the producer's request timeout
(`producer_request_timeout`: a quarter of `send_retry_s`). A trigger or forward that fails so is
sent again (`streams.faust.failures`), but a table's changelog record is handed over once and its
outcome only looked at afterwards (fix 11 in `streams.faust.transport`): one that failed stops the
worker before any commit past it. In a whole-cluster outage every record in flight failed so, and
the worker stopped, though nothing was wrong with any record and the broker takes them all once
it is back. So a batch's age leaves out the time the cluster was away
(`schemas.runtime.outages`): the outage ends, the batches are sent, and only time with the
cluster up counts toward the timeout.
A partition that has no leader while the cluster answers still fails its batches as before.
"""

from __future__ import annotations

import time
from typing import Any

from aiokafka.producer import message_accumulator

from schemas.runtime.outages import OUTAGES

# aiokafka's own, whatever `install` put in its place since (`streams.faust.canary` checks it).
AIOKAFKA_BATCH = message_accumulator.MessageBatch


class _Batch(message_accumulator.MessageBatch):  # type: ignore[misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._away_before_s = OUTAGES.downtime_s("kafka")

    def expired(self) -> bool:
        away_s = OUTAGES.downtime_s("kafka") - self._away_before_s
        return bool(time.monotonic() - self._ctime - away_s > self._ttl)


def install() -> None:
    """Every producer of this process makes its batches so (the accumulator names the class)."""
    message_accumulator.MessageBatch = _Batch
