"""Stream queues with lanes: decisions' inputs before telemetry, each lane bounded on its own."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from mode.utils.queues import FlowControlEvent

from streams.lanes import LanedQueue

GPU, NODES = "c.gpu", "c.nodes"


def event(topic: str, n: int) -> Any:
    return SimpleNamespace(message=SimpleNamespace(topic=topic), n=n)


def queue(maxsize: int = 100) -> LanedQueue:
    flow = FlowControlEvent()
    flow.resume()
    return LanedQueue(maxsize=maxsize, flow_control=flow, bulk_topics=frozenset({GPU}))


async def test_records_that_lead_to_decisions_jump_the_telemetry_in_order() -> None:
    q = queue()
    for n in range(5):
        await q.put(event(GPU, n))
    await q.put(event(NODES, 10))
    await q.put(event(NODES, 11))
    assert q.qsize() == 7 and not q.empty()
    got = [(e.message.topic, e.n) for e in [await q.get() for _ in range(7)]]
    assert got == [(NODES, 10), (NODES, 11), *((GPU, n) for n in range(5))]
    assert q.empty()


async def test_a_full_bulk_lane_never_holds_back_a_fast_record() -> None:
    q = queue(maxsize=3)
    for n in range(3):
        await q.put(event(GPU, n))
    assert q.full()  # so Faust's conductor hands the next record to `put`
    await asyncio.wait_for(q.put(event(NODES, 9)), timeout=1)  # the fast lane has room
    waiting = asyncio.ensure_future(q.put(event(GPU, 3)))
    await asyncio.sleep(0.01)
    assert not waiting.done()  # the bulk lane is full: telemetry waits
    assert (await q.get()).n == 9
    assert (await q.get()).n == 0  # room in the bulk lane: the waiting sample goes in
    await asyncio.wait_for(waiting, timeout=1)
    assert [(await q.get()).n for _ in range(3)] == [1, 2, 3]


def test_back_pressure_pauses_only_the_partitions_of_the_lane_that_fills() -> None:
    q = queue(maxsize=10)  # pressure high from 8 records, drop at 4
    paused: list[str] = []
    resumed: list[str] = []

    def put(topic: str, n: int) -> bool:
        return q.put_nowait_enhanced(
            event(topic, n),
            on_pressure_high=lambda: paused.append(topic),
            on_pressure_drop=lambda: resumed.append(topic),
        )

    assert not any(put(GPU, n) for n in range(8))
    assert put(GPU, 8) and paused == [GPU]  # the bulk lane is under pressure
    assert not put(NODES, 0) and paused == [GPU]  # the fast lane is not
    for _ in range(6):
        q.get_nowait()  # the fast record first, then samples: 4 left in the bulk lane
    assert resumed == []
    q.get_nowait()
    assert resumed == [GPU]  # seen at the drop size: fetched again
