"""Stream queues with lanes: decisions' inputs before telemetry, each lane bounded on its own."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from mode.utils.queues import FlowControlEvent

from schemas.codec import encode, encode_batch
from schemas.events import GpuXidObserved, NodeHeartbeat
from streams.faust.lanes import LanedQueue, Lanes, routine
from streams.testing import health, heartbeat, xid

GPU, NODES = "c.gpu", "c.nodes"
HEARTBEAT = b'{"type":"NodeHeartbeat","subject":"n1"}'


def event(topic: str, n: int, value: bytes = b"{}") -> Any:
    return SimpleNamespace(message=SimpleNamespace(topic=topic, value=value, offset=n), n=n)


def queue(maxsize: int = 100, overtaken: list[int] | None = None, bulk: int = 0) -> LanedQueue:
    flow = FlowControlEvent()
    flow.resume()
    told = overtaken if overtaken is not None else []
    lanes = Lanes(
        bulk_topics=frozenset({GPU}),
        bulk_records_max=bulk,
        telemetry=routine,
        overtaken=lambda message: told.append(message.offset),
    )
    return LanedQueue(maxsize=maxsize, flow_control=flow, lanes=lanes)


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


async def test_the_bulk_lane_holds_fewer_records_than_the_others_and_pauses_sooner() -> None:
    q = queue(maxsize=100, bulk=10)  # the bulk lane: pressure high from 8 records, drop at 4
    paused: list[str] = []
    resumed: list[str] = []

    def put(topic: str, n: int, value: bytes = b"{}") -> bool:
        return q.put_nowait_enhanced(
            event(topic, n, value),
            on_pressure_high=lambda: paused.append(topic),
            on_pressure_drop=lambda: resumed.append(topic),
        )

    assert not any(put(GPU, n) for n in range(8))
    assert put(GPU, 8) and paused == [GPU]
    assert not any(put(NODES, n, HEARTBEAT) for n in range(50)) and paused == [GPU]
    put(GPU, 9)
    assert q.full()  # the bulk lane, at its own size: Faust's conductor calls `put`
    waiting = asyncio.ensure_future(q.put(event(GPU, 10)))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    await asyncio.wait_for(q.put(event(NODES, 99)), timeout=1)  # the other lanes have room
    for _ in range(51):
        q.get_nowait()  # the fast record and the heartbeats
    q.get_nowait()  # a sample: room for the one waiting
    await asyncio.wait_for(waiting, timeout=1)
    for _ in range(6):
        q.get_nowait()  # 4 samples left
    assert resumed == []
    q.get_nowait()
    assert resumed == [GPU]  # seen at the bulk lane's drop size


async def test_heartbeats_queue_behind_what_leads_to_decisions_and_ahead_of_samples() -> None:
    told: list[int] = []
    q = queue(overtaken=told)
    await q.put(event(GPU, 0))
    for n in (1, 2):
        await q.put(event(NODES, n, HEARTBEAT))
    await q.put(event(NODES, 3))  # an XID, after the heartbeats of its partition
    await q.put(event(NODES, 4, HEARTBEAT))
    assert [(await q.get()).n for _ in range(5)] == [3, 1, 2, 4, 0]
    assert told == [1, 2, 4]  # each heartbeat an XID may overtake, in order


def test_a_full_telemetry_lane_pauses_its_partitions_not_the_bulk_ones() -> None:
    q = queue(maxsize=10)
    paused: list[str] = []

    def put(topic: str, n: int, value: bytes) -> bool:
        return q.put_nowait_enhanced(
            event(topic, n, value),
            on_pressure_high=lambda: paused.append(f"{topic}{value[:1]!r}"),
            on_pressure_drop=lambda: None,
        )

    assert not any(put(NODES, n, HEARTBEAT) for n in range(8))
    assert put(NODES, 8, HEARTBEAT) and len(paused) == 1
    assert not put(GPU, 0, b"{}") and not put(NODES, 9, b"{}") and len(paused) == 1


def test_one_heartbeat_is_told_from_everything_else_by_its_bytes() -> None:
    beat = heartbeat("n1")
    assert routine(encode(beat))
    assert routine(b'{ "type" : "NodeHeartbeat", "subject": "n1" }')  # spaced, as json.dumps
    assert not routine(encode(xid("n1", 79)))
    assert not routine(encode_batch([beat, xid("n1", 79)]))  # a batch with an XID in it
    assert not routine(encode_batch([beat, beat]))  # several: the fast lane, as any batch
    # An XID whose text quotes a heartbeat: the quoted key is escaped, so it is no match.
    quoting = xid("n1", 79).model_copy(update={"source": '"type":"NodeHeartbeat"'})
    assert b'\\"type\\":\\"NodeHeartbeat\\"' in encode(quoting)
    assert not routine(encode(quoting))


def test_a_passed_health_check_is_routine_and_any_other_is_not() -> None:
    assert routine(encode(health("n1", "dcgm", "OK")))
    for status in ("WARN", "CRITICAL", "UNKNOWN"):
        assert not routine(encode(health("n1", "dcgm", status)))
    # A failed check whose message quotes a passing one: escaped, so no match.
    assert not routine(encode(health("n1", "dcgm", "CRITICAL", message='"status":"OK"')))
    # A failed check whose details hold a passing part: the key appears twice, so no match.
    nested = health("n1", "dcgm", "CRITICAL").model_copy(deep=True)
    details = nested.payload.model_copy(update={"details": {"gpu0": {"status": "OK"}}})
    failed_with_details = nested.model_copy(update={"payload": details})
    assert b'"status":"OK"' in encode(failed_with_details)
    assert not routine(encode(failed_with_details))


def test_heartbeats_travel_with_xids_so_a_topic_cannot_tell_them_apart() -> None:
    assert NodeHeartbeat.topic == GpuXidObserved.topic
