"""`streams.faust.eager.start`: a coroutine that never waits finishes inline; one that waits resumes
where it stopped, with its result, its exceptions and its cancellation intact."""

from __future__ import annotations

import asyncio

import pytest

from streams.faust import eager


async def _no_wait(log: list[str]) -> str:
    log.append("ran")
    return "done"


async def _waits(gate: asyncio.Event, log: list[str]) -> str:
    log.append("before")
    await gate.wait()
    log.append("after")
    return "resumed"


async def test_a_coroutine_that_never_waits_finishes_inline() -> None:
    log: list[str] = []
    started = eager.start(_no_wait(log))
    assert isinstance(started, eager.Finished)
    assert started.value == "done"
    assert log == ["ran"]


async def test_a_waiting_coroutine_continues_where_it_stopped() -> None:
    gate, log = asyncio.Event(), []
    started = eager.start(_waits(gate, log))
    assert not isinstance(started, eager.Finished)
    assert log == ["before"]  # the first step ran inline, once
    task = asyncio.ensure_future(started)
    await asyncio.sleep(0)
    assert not task.done()
    gate.set()
    assert await task == "resumed"
    assert log == ["before", "after"]


async def test_cancelling_the_task_cancels_the_coroutine() -> None:
    gate, log = asyncio.Event(), []
    cleaned: list[str] = []

    async def waits_and_cleans() -> None:
        try:
            await _waits(gate, log)
        finally:
            cleaned.append("finally")

    started = eager.start(waits_and_cleans())
    assert not isinstance(started, eager.Finished)
    task = asyncio.ensure_future(started)
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["finally"]
    assert log == ["before"]


async def test_an_error_in_the_first_step_propagates() -> None:
    async def fails() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        eager.start(fails())


async def test_an_error_after_resuming_reaches_the_awaiter() -> None:
    gate = asyncio.Event()

    async def fails_later() -> None:
        await gate.wait()
        raise KeyError("late")

    started = eager.start(fails_later())
    assert not isinstance(started, eager.Finished)
    task = asyncio.ensure_future(started)
    gate.set()
    with pytest.raises(KeyError, match="late"):
        await task
