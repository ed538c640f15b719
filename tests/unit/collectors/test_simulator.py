import asyncio
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest

from collectors.simulate import runner
from collectors.simulate.config import SimConfig
from collectors.simulate.model import ClusterModel
from collectors.simulate.runner import (
    ROUTINE,
    SimStats,
    group,
    period_start,
    simulate,
    sliced,
)
from collectors.sink import RecordingSink
from schemas.codec import decode, encode_batch
from schemas.envelope import Event, utcnow
from schemas.events import (
    GpuSampled,
    GpuXidObserved,
    JobExited,
    JobState,
    LogSignalDetected,
    NcclSampled,
    NodeHeartbeat,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)

FAULTY = SimConfig(
    nodes=24,
    gpus=4,
    jobs=6,
    seed=7,
    nodes_per_job=(1, 2),
    job_duration_s=(300.0, 600.0),
    xid_nodes=1,
    xid_every_s=120.0,
    crash_jobs=1,
    preempt_jobs=1,
    slow_nccl_jobs=1,
    lost_heartbeat_nodes=1,
    lost_heartbeat_at_s=100.0,
)


async def run(config: SimConfig, duration_s: float) -> RecordingSink:
    sink = RecordingSink()
    await simulate(config, sink, duration_s=duration_s, start=T0)
    return sink


async def test_same_seed_same_story_other_seed_other_story() -> None:
    a, b = await run(FAULTY, 900), await run(FAULTY, 900)
    dump = lambda s: [e.model_dump(exclude={"observed_at"}) for e in s.events]  # noqa: E731
    assert dump(a) == dump(b)
    c = await run(FAULTY.model_copy(update={"seed": 8}), 900)
    assert dump(a) != dump(c)


async def test_faults_are_injected() -> None:
    sink = await run(FAULTY, 900)
    exits = Counter(e.payload.state for e in sink.of_type(JobExited))
    assert exits[JobState.FAILED] >= 1 and exits[JobState.PREEMPTED] == 1
    assert exits[JobState.SUCCEEDED] >= 1
    completed = {e.subject for e in sink.of_type(LogSignalDetected)}
    failed = {e.subject for e in sink.of_type(JobExited) if e.payload.state != JobState.SUCCEEDED}
    assert not completed & failed  # crashed jobs never logged Training Complete
    xids = sink.of_type(GpuXidObserved)
    assert len(xids) >= 5 and len({e.subject for e in xids}) == 1  # one node, recurring
    slow = [e.payload.busbw_gbps for e in sink.of_type(NcclSampled) if e.payload.busbw_gbps < 100]
    assert slow
    beats = Counter(e.subject for e in sink.of_type(NodeHeartbeat))
    last_beat = {e.subject: e.occurred_at for e in sink.of_type(NodeHeartbeat)}
    silent = [n for n, at in last_beat.items() if (at - T0).total_seconds() < 100]
    assert len(silent) == 1 and beats[silent[0]] < min(beats.values()) + 1


async def test_batches_are_one_subject_one_topic_and_decode() -> None:
    sink = await run(FAULTY, 60)
    for batch in group(sink.events):
        assert len({(e.topic, e.subject) for e in batch}) == 1
        assert decode(encode_batch(batch)) == batch
    gpu = [b for b in sink.batches if isinstance(b[0], GpuSampled)]
    assert gpu and all(sum(isinstance(e, GpuSampled) for e in b) == FAULTY.gpus for b in gpu)


async def test_drives_a_thousand_node_cluster() -> None:
    sink = RecordingSink(keep=False)
    config = SimConfig(nodes=1000, gpus=8, jobs=120, seed=1, xid_nodes=3, lost_heartbeat_nodes=2)
    stats = await simulate(config, sink, duration_s=20, start=T0)
    assert stats.ticks == 3
    assert sink.by_type["GpuSampled"] == 3 * 1000 * 8
    assert sink.by_type["NodeHeartbeat"] == 1000
    assert sink.by_type["JobSubmitted"] >= 120  # plus replacements of jobs an XID killed
    assert stats.messages == sink.messages < stats.events / 5  # batched


class _SlowSink(RecordingSink):
    """A sink that takes `delay_s` per message, one message at a time."""

    def __init__(self, delay_s: float, *, keep: bool = False) -> None:
        super().__init__(keep=keep)
        self.delay_s = delay_s
        self._one = asyncio.Lock()

    async def emit_batch(self, events: Sequence[Event]) -> None:
        async with self._one:
            await asyncio.sleep(self.delay_s)
            await super().emit_batch(events)


SMALL = SimConfig(nodes=4, gpus=1, jobs=1, seed=3, interval_s=10.0)


async def test_a_paced_run_that_keeps_up_says_so() -> None:
    stats = await simulate(SMALL, RecordingSink(keep=False), duration_s=20, speed=40, start=T0)
    assert stats.scheduled_s == 30 / 40  # three ticks of 10 s at x40
    assert stats.realtime_ratio is not None and stats.realtime_ratio >= 0.95
    assert not stats.fell_behind and stats.behind_s_max < 0.2


async def test_a_paced_run_that_falls_behind_says_by_how_much() -> None:
    # Each tick is 5+ messages of 50 ms, one at a time: a quarter second or more per tick,
    # where x100 gives it a tenth.
    stats = await simulate(SMALL, _SlowSink(0.05), duration_s=40, speed=100, start=T0)
    assert stats.fell_behind
    assert stats.realtime_ratio is not None and stats.realtime_ratio < 0.6
    assert stats.behind_s_max > 0.4  # the fifth tick started that late at least


async def test_an_unpaced_run_has_no_schedule_to_keep() -> None:
    stats = await simulate(SMALL, RecordingSink(keep=False), duration_s=20, start=T0)
    assert stats.realtime_ratio is None and not stats.fell_behind


async def test_a_paced_run_that_falls_behind_stamps_its_ticks_when_it_sends_them() -> None:
    """As an agent that samples late stamps its samples: the events of a late tick are not
    stamped with the time they were due, which would make them look older than they are."""
    sink = _SlowSink(0.05, keep=True)
    stats = await simulate(SMALL, sink, duration_s=40, speed=100, start=T0)
    assert stats.fell_behind
    last = max(e.occurred_at for e in sink.events if e.type == "GpuSampled")
    # The last tick (40 s of cluster time) was sent behind schedule: stamped that much later.
    assert (last - T0).total_seconds() > 40 + 0.3 * 100


class _Clock:
    """The runner's clock, moved only by its pauses: when each part is due, not how loaded
    the machine running the test is, decides when it leaves."""

    def __init__(self) -> None:
        self.now_s = 0.0

    def perf_counter(self) -> float:
        return self.now_s

    async def pause(self, stop: asyncio.Event | None, delay_s: float) -> None:
        self.now_s += max(0.0, delay_s)
        await asyncio.sleep(0)


class _ClockedSink(RecordingSink):
    """Records when, on the runner's clock, each message left."""

    def __init__(self, clock: _Clock) -> None:
        super().__init__()
        self.clock = clock
        self.sent: list[tuple[float, tuple[Event, ...]]] = []

    async def emit_batch(self, events: Sequence[Event]) -> None:
        self.sent.append((self.clock.perf_counter(), tuple(events)))
        await super().emit_batch(events)


def test_each_nodes_telemetry_keeps_its_part_of_the_interval_and_faults_lead() -> None:
    """Agents sample on their own clocks: a node's samples take the same part of every tick;
    anything else (here the XID) leaves with the tick."""
    config = SimConfig(nodes=40, gpus=1, jobs=2, seed=5, interval_s=10.0, xid_nodes=40)
    model = ClusterModel(config, T0)
    seen: dict[str, set[int]] = {}
    for t in (0.0, 10.0, 20.0):
        parts = sliced(group(model.tick(t)), 5)
        assert all(parts)
        for k, part in enumerate(parts):
            for batch in part:
                if all(e.type in ROUTINE for e in batch):
                    seen.setdefault(f"{batch[0].topic}/{batch[0].subject}", set()).add(k)
                else:
                    assert k == 0, [e.type for e in batch]
    assert seen and all(len(parts) == 1 for parts in seen.values())
    assert sliced(group(model.tick(30.0)), 1)[0]  # one part: the whole tick at once


async def test_a_paced_run_sends_its_parts_across_the_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = SimConfig(nodes=40, gpus=1, jobs=2, seed=5, interval_s=10.0)
    tick_s = 10.0 / 10  # at x10

    async def run(slices: int) -> tuple[SimStats, set[float]]:
        clock = _Clock()
        monkeypatch.setattr(runner, "time", clock)
        monkeypatch.setattr(runner, "pause", clock.pause)
        sink = _ClockedSink(clock)
        stats = await simulate(config, sink, duration_s=20, speed=10, start=T0, slices=slices)
        return stats, {round(at % tick_s / tick_s, 6) for at, _ in sink.sent}

    spread, spread_at = await run(5)
    at_once, at_once_at = await run(1)
    assert not spread.fell_behind and not at_once.fell_behind
    assert spread_at == {0.0, 0.2, 0.4, 0.6, 0.8}  # a part at each fifth of the tick
    assert at_once_at == {0.0}  # the whole tick at its start
    assert spread.events == at_once.events


class _Stamped(RecordingSink):
    """Records how far ahead of the wall clock each event was when it was sent."""

    def __init__(self) -> None:
        super().__init__(keep=True)
        self.ahead_s = 0.0

    async def emit_batch(self, events: Sequence[Event]) -> None:
        now = utcnow()
        self.ahead_s = max(self.ahead_s, *((e.occurred_at - now).total_seconds() for e in events))
        await super().emit_batch(events)


async def test_an_unpaced_run_ends_now_and_stamps_nothing_ahead_of_the_clock() -> None:
    """The workers stamp what they do with the wall clock: a simulated period stamped ahead
    of it put a node's drain before its XID (issue 40)."""
    sink = _Stamped()
    began = utcnow()
    stats = await simulate(SMALL, sink, duration_s=600)
    assert sink.ahead_s <= 0
    assert stats.first_at is not None and stats.last_at is not None
    assert (stats.last_at - stats.first_at).total_seconds() == 600
    assert began - timedelta(seconds=1) <= stats.last_at <= utcnow()


async def test_a_run_paced_faster_than_real_time_ends_when_it_does() -> None:
    sink = _Stamped()
    stats = await simulate(SMALL, sink, duration_s=40, speed=100)
    assert sink.ahead_s <= 0 and stats.last_at is not None
    assert abs((utcnow() - stats.last_at).total_seconds()) < 1.0
    assert period_start(T0, 600, 0) == T0 - timedelta(seconds=600)
    assert period_start(T0, 600, 1) == T0 == period_start(T0, 600, 0.5)
    assert period_start(T0, 600, 4) == T0 - timedelta(seconds=450)


async def test_it_says_which_nodes_and_jobs_it_faulted_and_how() -> None:
    config = FAULTY.model_copy(update={"bad_nodes": 1})
    model = ClusterModel(config, T0)
    [bad] = model.bad_nodes
    [xid] = model.xid_nodes
    [lost] = model.lost_nodes
    assert bad != xid and model.unhealthy() == {bad: "a broken GPU: benchmark below thresholds"}
    stats = await simulate(config, RecordingSink(keep=False), duration_s=900, start=T0)
    said = {(f.subject, f.how): f for f in stats.faulted}
    assert said[(xid, "XID 79")].count >= 5 and said[(bad, "XID 79")].count >= 5
    assert (bad, "benchmark fails (a broken GPU)") in said
    assert said[(lost, "agent died: no heartbeats, no samples")].first_at == T0 + timedelta(
        seconds=100
    )
    jobs = {f.how.split(":")[0] for f in stats.faulted if f.kind == "job"}
    assert {"crashed", "preempted", "NCCL at a fifth of its bus bandwidth"} <= jobs
    first = {f.subject: f.first_at for f in stats.faulted}
    assert all(T0 <= at <= T0 + timedelta(seconds=900) for at in first.values())


async def test_a_seed_without_bad_nodes_tells_the_story_it_always_told() -> None:
    plain = await run(FAULTY, 300)
    none = await run(FAULTY.model_copy(update={"bad_nodes": 0}), 300)
    assert [e.event_id for e in plain.events] == [e.event_id for e in none.events]
