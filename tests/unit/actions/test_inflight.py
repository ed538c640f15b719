"""Triggers side by side: one subject's in order, offsets committable only past finished work."""

from __future__ import annotations

import asyncio

from aiokafka import TopicPartition

from actions.inflight import Inflight

TP = TopicPartition("triggers", 0)


async def test_subject_in_order_others_meanwhile_commits_up_to_first_unfinished() -> None:
    inflight = Inflight(limit=8)
    log: list[str] = []
    gate = asyncio.Event()

    async def work(name: str, wait: bool = False) -> None:
        if wait:
            await gate.wait()
        log.append(name)

    inflight.start(TP, 0, "job-a", work("a1", wait=True))
    inflight.start(TP, 1, "job-a", work("a2"))
    inflight.start(TP, 2, "job-b", work("b1"))
    await asyncio.sleep(0.05)
    assert log == ["b1"]  # b went on; a2 waits for a1
    assert inflight.committable() == {}  # offset 0 is not finished: nothing may be committed
    gate.set()
    await inflight.settle(1.0)
    assert log == ["b1", "a1", "a2"]
    assert inflight.committable() == {TP: 3}
    assert inflight.committable() == {}  # each offset once


async def test_abandoned_work_is_never_committed() -> None:
    inflight = Inflight(limit=1)
    inflight.start(TP, 0, "job-a", asyncio.sleep(60))
    assert inflight.room == 0
    await inflight.settle(0.05)
    await inflight.abandon()
    assert inflight.committable() == {} and len(inflight) == 0
