"""An agent's records handed over together while more are queued (`streams.faust.batching`):
none waits in hand for a record that is not there, and none is acknowledged before it is
handled."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from types import SimpleNamespace
from typing import Any

import pytest
from mode.utils.queues import FlowControlEvent

from streams.faust.batching import in_batches
from streams.faust.lanes import LanedQueue, Lanes


class Stream:
    """What `in_batches` uses of a Faust stream: its channel's queue, events, acks."""

    def __init__(self) -> None:
        flow = FlowControlEvent()
        flow.resume()
        self.channel = SimpleNamespace(queue=LanedQueue(lanes=Lanes(), flow_control=flow))
        self.enable_acks = True
        self.acked: list[Any] = []

    async def events(self) -> AsyncIterator[Any]:
        while True:
            yield await self.channel.queue.get()

    async def ack(self, event: Any) -> None:
        self.acked.append(event)


class Handled:
    def __init__(self, stream: Stream, fail: bool = False) -> None:
        self.stream, self.fail = stream, fail
        self.batches: list[list[Any]] = []

    async def __call__(self, records: Sequence[Any]) -> None:
        assert not set(records) & set(self.stream.acked)  # acknowledged only once handled
        self.batches.append(list(records))
        if self.fail:
            raise RuntimeError("the worker stops")


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_what_is_queued_is_handed_over_together_and_acknowledged_after() -> None:
    stream = Stream()
    handled = Handled(stream)
    idle: list[int] = []
    for record in range(5):
        stream.channel.queue.put_nowait(record)
    agent = asyncio.ensure_future(
        in_batches(stream, handled, records_max=3, idle=lambda: idle.append(len(stream.acked)))
    )
    await _settle()
    # Three at most together; the other two as soon as the queue has no more, not later.
    assert handled.batches == [[0, 1, 2], [3, 4]]
    assert stream.acked == [0, 1, 2, 3, 4] and stream.enable_acks is False
    assert idle == [5]  # told once all is handled and nothing is left, not between
    stream.channel.queue.put_nowait(5)  # real time: a record alone
    await _settle()
    assert handled.batches[-1] == [5] and stream.acked[-1] == 5
    agent.cancel()


async def test_records_whose_handling_fails_are_never_acknowledged() -> None:
    stream = Stream()
    handled = Handled(stream, fail=True)
    for record in range(2):
        stream.channel.queue.put_nowait(record)
    with pytest.raises(RuntimeError):
        await asyncio.wait_for(in_batches(stream, handled, records_max=10), timeout=5)
    assert handled.batches == [[0, 1]] and stream.acked == []


async def test_only_an_agent_of_a_laned_queue_holds_records() -> None:
    stream = Stream()
    stream.channel = SimpleNamespace(queue=asyncio.Queue())
    with pytest.raises(TypeError, match="LanedQueue"):
        await in_batches(stream, Handled(stream), records_max=10)
