"""Fix 2 of streams/faust/transport.py, bounded: a flush before a commit waits for the changelog
records put before it began, not for an empty buffer, which a steady load never leaves."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import faust
from faust.transport.producer import ProducerBuffer

from streams.faust.transport import _Buffer

BEFORE = 50


class _SlowSender(_Buffer):
    """Hands a record over every millisecond, and remembers which."""

    sent: list[int]

    async def _send_pending(self, fut: Any) -> None:
        await asyncio.sleep(0.001)
        self.sent.append(fut.result())


def _record(number: int) -> asyncio.Future[int]:
    """A record already answered by the broker, as Faust's future for it would be."""
    record: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    record.set_result(number)
    return record


async def test_a_flush_waits_for_the_records_before_it_and_not_for_those_after() -> None:
    buffer = _SlowSender()
    buffer.sent = []
    buffer.app = faust.App("drain", broker="kafka://127.0.0.1:1", autodiscover=False)
    await buffer.start()
    numbers = iter(range(1_000_000))
    for _ in range(BEFORE):
        buffer.put(_record(next(numbers)))

    async def steady_load() -> None:  # faster than the sender: the buffer never empties
        while True:
            buffer.put(_record(next(numbers)))
            await asyncio.sleep(0.0002)

    load = asyncio.create_task(steady_load())
    try:
        await asyncio.wait_for(buffer.drain(), timeout=5)
        assert buffer.sent[:BEFORE] == list(range(BEFORE))  # every one of them, in order
        assert buffer.size > 0  # and the load's records are still waiting
    finally:
        load.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await load
        while not buffer.pending.empty():  # Faust's own stop refuses a buffer with records
            buffer.pending.get_nowait()
        await buffer.stop()


async def test_a_flush_of_an_empty_buffer_returns_at_once() -> None:
    buffer = _SlowSender()
    buffer.sent = []
    buffer.app = faust.App("drain-empty", broker="kafka://127.0.0.1:1", autodiscover=False)
    await buffer.start()
    try:
        await asyncio.wait_for(buffer.drain(), timeout=0.5)
    finally:
        await buffer.stop()


async def test_the_buffer_counts_its_waiting_records_as_faust_does() -> None:
    buffer = _Buffer()
    buffer.app = faust.App("size", broker="kafka://127.0.0.1:1", autodiscover=False)
    assert not buffer.app.conf.producer_threaded  # the case ours answers without the settings
    for number in range(3):
        buffer.put(_record(number))
    assert buffer.size == ProducerBuffer.size.fget(buffer) == 3  # type: ignore[attr-defined]
    buffer.pending.get_nowait()
    assert buffer.size == ProducerBuffer.size.fget(buffer) == 2  # type: ignore[attr-defined]
