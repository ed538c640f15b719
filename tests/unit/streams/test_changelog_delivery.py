"""Fix 11 of streams/faust/transport.py: a changelog record the broker refuses after aiokafka took
it is noticed, the stores are distrusted, and the flush before the next commit raises."""

from __future__ import annotations

import asyncio
from typing import Any

import faust
import pytest
from aiokafka.errors import MessageSizeTooLargeError

from streams.faust import clean_start
from streams.faust import transport as faust_transport
from streams.faust.commit import ChangelogUndelivered
from streams.faust.transport import _Buffer


class _Handed(_Buffer):
    """Hands each record over at once; the records are futures the test answers, as Faust
    answers a FutureMessage once the broker has."""

    async def _send_pending(self, fut: Any) -> None:
        return None


async def _buffer(name: str) -> _Handed:
    buffer = _Handed()
    buffer.app = faust.App(name, broker="kafka://127.0.0.1:1", autodiscover=False)
    await buffer.start()
    return buffer


async def test_a_refused_record_is_remembered_and_the_stores_distrusted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    distrusted: list[bool] = []
    monkeypatch.setattr(clean_start, "distrust", lambda: distrusted.append(True))
    buffer = await _buffer("refused")
    loop = asyncio.get_running_loop()
    records: list[asyncio.Future[None]] = [loop.create_future() for _ in range(3)]
    try:
        for record in records:
            buffer.put(record)
        await asyncio.wait_for(buffer.drain(), timeout=2)
        assert buffer.refused() is None  # none answered yet
        refused = MessageSizeTooLargeError()
        records[0].set_result(None)
        records[1].set_exception(refused)
        records[2].set_exception(MessageSizeTooLargeError())
        assert buffer.refused() is refused  # the first one
        assert distrusted == [True]
        assert not buffer.handed  # every answered record let go
    finally:
        await buffer.stop()


async def test_delivered_records_leave_nothing_to_report() -> None:
    buffer = await _buffer("delivered")
    record: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    try:
        buffer.put(record)
        await asyncio.wait_for(buffer.drain(), timeout=2)
        record.set_result(None)
        assert buffer.refused() is None
        assert not buffer.handed
    finally:
        await buffer.stop()


async def test_the_flush_before_a_commit_refuses_once_a_record_was_refused() -> None:
    scheme = faust_transport.install(20)
    app = faust.App("flush-refused", broker=f"{scheme}://127.0.0.1:1", autodiscover=False)
    producer = app.producer
    await producer.flush()  # nothing refused: a flush goes through
    buffer = producer.buffer
    assert isinstance(buffer, _Buffer)
    record: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    record.set_exception(MessageSizeTooLargeError())  # answered, as Faust answers a refusal
    buffer.handed.append(record)
    with pytest.raises(ChangelogUndelivered, match="MessageSizeTooLarge"):
        await producer.flush()
