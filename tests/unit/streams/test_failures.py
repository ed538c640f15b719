"""Which failures the streams worker retries, and for how long."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    NotLeaderForPartitionError,
    UnknownTopicOrPartitionError,
)
from faust.exceptions import ProducerSendError

from schemas.runtime.outages import OUTAGES
from streams.faust.failures import call_retrying, retrying, transient


def wrapped(cause: Exception) -> ProducerSendError:
    """As Faust raises a failed send."""
    try:
        raise ProducerSendError(f"Error while sending: {cause!r}") from cause
    except ProducerSendError as exc:
        return exc


@pytest.mark.parametrize(
    "exc",
    [
        KafkaConnectionError(),
        KafkaTimeoutError(),
        NotLeaderForPartitionError(),
        wrapped(UnknownTopicOrPartitionError()),
        ConnectionResetError(),
    ],
)
def test_broker_trouble_is_transient(exc: Exception) -> None:
    assert transient(exc)


@pytest.mark.parametrize(
    "exc",
    [
        MessageSizeTooLargeError(),
        wrapped(MessageSizeTooLargeError()),
        ValueError(),
        OverflowError(),
    ],
)
def test_what_fails_the_same_way_every_time_is_not(exc: Exception) -> None:
    assert not transient(exc)


async def attempts(exc: Exception, budget_s: float, stopping: bool = False) -> int:
    tries = 0
    with pytest.raises(type(exc)):
        async for attempt in retrying("test", budget_s, lambda: stopping):
            with attempt:
                tries += 1
                raise exc
    return tries


async def test_a_deterministic_failure_is_tried_once() -> None:
    assert await attempts(MessageSizeTooLargeError(), budget_s=5) == 1


async def test_a_transient_failure_is_retried_within_its_budget_then_raised() -> None:
    started = time.monotonic()
    tries = await attempts(KafkaConnectionError(), budget_s=0.5)
    assert tries > 1
    assert time.monotonic() - started < 0.5 + 5.0 + 0.5  # budget, at most one backoff, slack


async def test_a_stopping_worker_does_not_retry() -> None:
    assert await attempts(KafkaConnectionError(), budget_s=60, stopping=True) == 1


async def calls(failures: list[Exception], budget_s: float = 5, stopping: bool = False) -> int:
    """How many times `call_retrying` called a function that fails with `failures` in turn."""
    tries = 0

    async def call() -> str:
        nonlocal tries
        tries += 1
        if failures:
            raise failures.pop(0)
        return "sent"

    # A lambda, as callers pass: tenacity alone would hand back its awaitable unawaited.
    assert await call_retrying("test", lambda: call(), budget_s, lambda: stopping) == "sent"
    return tries


async def test_call_retrying_calls_once_when_the_first_try_works() -> None:
    assert await calls([]) == 1


async def test_call_retrying_retries_transient_failures_of_the_first_try() -> None:
    assert await calls([KafkaConnectionError(), KafkaTimeoutError()]) == 3


async def test_call_retrying_raises_a_deterministic_failure_at_once() -> None:
    with pytest.raises(MessageSizeTooLargeError):
        await calls([MessageSizeTooLargeError()])


async def test_call_retrying_does_not_retry_while_stopping() -> None:
    with pytest.raises(KafkaConnectionError):
        await calls([KafkaConnectionError()], stopping=True)


async def test_the_budget_does_not_run_down_while_the_kafka_cluster_is_away() -> None:
    kafka = OUTAGES.watch("kafka", "127.0.0.1:1", lambda: False)
    kafka.observe(False, time.monotonic(), 60.0)
    retried = asyncio.create_task(attempts(KafkaConnectionError(), budget_s=0.3))
    await asyncio.sleep(1.0)
    assert not retried.done()  # three budgets later, still trying
    kafka.observe(True, time.monotonic(), 60.0)
    back = time.monotonic()
    assert await asyncio.wait_for(retried, 0.3 + 5.0 + 0.5) > 1
    assert time.monotonic() - back >= 0.3  # the whole budget, after the outage
