"""Fix 11 of streams/faust_transport.py: a changelog record the broker refuses after aiokafka took
it is remembered, the stores are distrusted, and the flush before the next commit raises."""

from __future__ import annotations

import asyncio
from typing import Any

import faust
import pytest
from aiokafka.errors import MessageSizeTooLargeError

from streams import clean_start, faust_transport
from streams.faust_transport import ChangelogUndelivered, _Buffer


class _Answered(_Buffer):
    """Hands each record over at once; its delivery is a future the test answers."""

    deliveries: list[asyncio.Future[Any]]

    async def _send_pending(self, fut: Any) -> Any:
        delivery: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.deliveries.append(delivery)
        return delivery


async def _buffer(name: str) -> _Answered:
    buffer = _Answered()
    buffer.deliveries = []
    buffer.app = faust.App(name, broker="kafka://127.0.0.1:1", autodiscover=False)
    await buffer.start()
    return buffer


async def test_a_refused_delivery_is_remembered_and_the_stores_distrusted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    distrusted: list[bool] = []
    monkeypatch.setattr(clean_start, "distrust", lambda: distrusted.append(True))
    buffer = await _buffer("refused")
    try:
        for n in range(3):
            buffer.put(n)  # any value: the sender is ours
        await asyncio.wait_for(buffer.drain(), timeout=2)
        buffer.deliveries[0].set_result(None)
        refused = MessageSizeTooLargeError()
        buffer.deliveries[1].set_exception(refused)
        buffer.deliveries[2].set_exception(MessageSizeTooLargeError())
        await asyncio.sleep(0)  # done callbacks run on the next loop turn
        assert buffer.undelivered is refused  # the first one
        assert distrusted == [True]
    finally:
        await buffer.stop()


async def test_delivered_records_leave_nothing_to_report() -> None:
    buffer = await _buffer("delivered")
    try:
        buffer.put(1)
        await asyncio.wait_for(buffer.drain(), timeout=2)
        buffer.deliveries[0].set_result(None)
        await asyncio.sleep(0)
        assert buffer.undelivered is None
    finally:
        await buffer.stop()


async def test_the_flush_before_a_commit_refuses_once_a_record_was_refused() -> None:
    scheme = faust_transport.install(20)
    app = faust.App("flush-refused", broker=f"{scheme}://127.0.0.1:1", autodiscover=False)
    producer = app.producer
    await producer.flush()  # nothing refused: a flush goes through
    assert isinstance(producer.buffer, _Buffer)
    producer.buffer.undelivered = MessageSizeTooLargeError()
    with pytest.raises(ChangelogUndelivered, match="MessageSizeTooLarge"):
        await producer.flush()
