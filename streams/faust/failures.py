"""Which failures are worth another try, and how long we keep trying.

Deterministic failures (a record too large, an invalid value, a codec nobody can read) fail the
same way every time: retrying them only wedges the worker, so they are never retried. Transient
ones (a broker unreachable, a leader moving, a request timing out) are retried with jittered
exponential backoff, for a bounded time and never past a stop request, so one partition's
trouble cannot hold the others (they share the agent) for ever.

The budget does not run down while the whole Kafka cluster is away (`schemas.runtime.outages`): then
every partition waits alike, and giving a message up would only lose it (its dead letter cannot
be sent either). Nor is each retry logged meanwhile: the outage's own lines say it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import structlog
from aiokafka.errors import KafkaError, KafkaTimeoutError
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    wait_random_exponential,
)
from tenacity.stop import stop_base

from schemas.runtime.outages import OUTAGES

log = structlog.get_logger("streams")
T = TypeVar("T")


def transient(exc: BaseException) -> bool:
    """Worth another try; Faust wraps Kafka's errors (`ProducerSendError` from ...), so the
    causes are what count."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, KafkaError):
            return bool(cause.retriable) or isinstance(cause, KafkaTimeoutError)
        if isinstance(cause, ConnectionError | TimeoutError):
            return True
        cause = cause.__cause__
    return False


class _stop_when(stop_base):
    def __init__(self, stopping: Callable[[], bool]) -> None:
        self.stopping = stopping

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.stopping()


class _after_delay_with_kafka_up(stop_base):
    """`budget_s` spent, not counting the time the Kafka cluster was away meanwhile."""

    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self.started = time.monotonic()
        self.away_before_s = OUTAGES.downtime_s("kafka")

    def __call__(self, retry_state: RetryCallState) -> bool:
        away_s = OUTAGES.downtime_s("kafka") - self.away_before_s
        return time.monotonic() - self.started - away_s >= self.budget_s


def _log_retry(what: str) -> Callable[[RetryCallState], None]:
    def before_sleep(state: RetryCallState) -> None:
        if OUTAGES.explains("kafka"):
            return
        exc = state.outcome.exception() if state.outcome else None
        log.warning(
            f"{what}_retry",
            error=repr(exc),
            attempt=state.attempt_number,
            retry_in_s=round(state.upcoming_sleep, 3),
        )

    return before_sleep


def retrying(what: str, budget_s: float, stopping: Callable[[], bool]) -> AsyncRetrying:
    """Transient failures retried for at most `budget_s` of Kafka being up, and never once
    `stopping()`; the last failure (or any deterministic one, at once) is raised."""
    return AsyncRetrying(
        retry=retry_if_exception(transient),
        wait=wait_random_exponential(multiplier=0.1, max=5.0),
        stop=_after_delay_with_kafka_up(budget_s) | _stop_when(stopping),
        before_sleep=_log_retry(what),
        reraise=True,
    )


async def call_retrying(
    what: str, call: Callable[[], Awaitable[T]], budget_s: float, stopping: Callable[[], bool]
) -> T:
    """`call()`, retried as `retrying` says. The first try runs outside tenacity: it runs once per
    message, where building the retry machinery cost more than the call itself (a fifth of a
    dead letter), and almost every first try succeeds."""
    try:
        return await call()
    except Exception as exc:
        if not transient(exc) or stopping():
            raise
        if not OUTAGES.explains("kafka"):
            log.warning(f"{what}_retry", error=repr(exc), attempt=1)

    async def again() -> T:  # tenacity would return the awaitable of a plain callable unawaited
        return await call()

    return await retrying(what, budget_s, stopping)(again)
