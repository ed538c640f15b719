"""What the scale bench concludes from what it reads: latencies from fault to decision and to
action result, consumer lag, percentiles, and the targets."""

from __future__ import annotations

import pytest
from aiokafka import ConsumerRecord, TopicPartition

from centrality.bench.hostile_watch import PeakRss
from centrality.bench.scale import Options, percentile_ms, report
from centrality.bench.scale_watch import Decisions, LagSampler, TimedSink, WorkerLag
from collectors.simulate.runner import SimStats
from collectors.sink import RecordingSink
from schemas.codec import encode
from schemas.envelope import Event
from streams.testing import checkpoint, xid
from tests.factories import exited, restarted
from tests.support.triggers import quarantine, restart

JOB = "slurm/sim/job-1"


def approx(seconds: float) -> object:
    return pytest.approx(seconds, abs=1e-3)


def _at(event: Event, at_s: float) -> ConsumerRecord[bytes, bytes]:
    value = encode(event)
    return ConsumerRecord("t", 0, 0, int(at_s * 1000), 0, b"k", value, None, 0, len(value), ())


def test_a_crash_counts_until_the_result_of_the_restart_decided_after_it() -> None:
    earlier, later = restart(JOB, "attempt-0"), restart(JOB, "attempt-1")
    seen = Decisions()
    # An older restart (of an earlier failure) and its result come first: they are not this one.
    for event, at in ((earlier, 5.0), (restarted(earlier), 6.0), (restarted(later), 10.4)):
        seen.see(_at(event, at))
    seen.see(_at(exited("FAILED", subject=JOB), 10.0))
    seen.see(_at(exited("FAILED", subject=JOB, at_s=30), 10.2))  # only the first failure counts
    seen.see(_at(later, 10.1))
    assert seen.restart_latencies_s([JOB, "slurm/sim/other"]) == [approx(0.4), None]
    assert seen.restart_decided_s([JOB, "slurm/sim/other"]) == [approx(0.1), None]


def test_a_quarantine_counts_from_the_first_xid_of_each_node_it_names() -> None:
    trigger = quarantine(("node-1", "node-2"))
    seen = Decisions()
    for event, at in ((xid("node-1"), 3.0), (xid("node-2"), 3.2), (xid("node-1", at_s=9), 3.24)):
        seen.see(_at(event, at))
    seen.see(_at(trigger, 3.25))
    seen.see(ConsumerRecord("t", 0, 1, 4000, 0, b"k", b"\xff junk", None, 0, 6, ()))
    latencies = seen.xid_latencies_s(["node-1", "node-2", "node-3"])
    assert latencies == [approx(0.25), approx(0.05), None]
    # The simulator handed node-1's XID over at 2.9 and node-3's (never read back) at 1.0.
    sink = TimedSink(RecordingSink())
    sink.xids.update({"node-1": 2.9, "node-3": 1.0})
    assert seen.handover_s(sink) == [approx(0.1)]


async def test_the_timed_sink_notes_first_faults_and_passes_everything_on() -> None:
    inner = RecordingSink()
    sink = TimedSink(inner)
    await sink.emit(checkpoint(100, subject=JOB))
    await sink.emit(exited("FAILED", subject=JOB))
    first = sink.crashes[JOB]
    await sink.emit(exited("FAILED", subject=JOB, at_s=10))
    await sink.emit(exited("SUCCEEDED", subject="slurm/sim/fine"))
    assert sink.crashes == {JOB: first} and not sink.xids
    assert len(inner.events) == 4


def test_lag_counts_what_is_not_committed_less_what_faust_holds_back() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    streams = WorkerLag("streams", "g", [a, b], held_back=1)
    streams.update({a: 99, b: -1}, {a: 100, b: 7})  # a: idle (one held back); b: never read
    assert (streams.now, streams.max) == (7, 7)
    streams.update({a: 100, b: 6}, {a: 100, b: 7})
    assert (streams.now, streams.max) == (0, 7)
    sink = WorkerLag("sink", "g", [a], held_back=0)
    sink.update({a: 99}, {a: 100})
    assert sink.now == 1


def test_percentiles_are_nearest_rank_in_ms() -> None:
    values = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    assert percentile_ms(values, 0.5) == 50.0 and percentile_ms(values, 0.99) == 99.0
    assert percentile_ms([0.3], 0.99) == 300.0 and percentile_ms([], 0.5) is None


def _options() -> Options:
    return Options(
        nodes=10,
        gpus=8,
        jobs=1,
        interval_s=10,
        duration_s=60,
        xid_nodes=1,
        crash_jobs=1,
        seed=1,
        ready_timeout_s=1,
        drain_timeout_s=1,
        keep=False,
    )


def test_every_target_is_judged_and_a_fault_never_decided_fails_the_run() -> None:
    stats = SimStats(ticks=7, events=700, wall_s=60.5, scheduled_s=60.0)
    lags = LagSampler.__new__(LagSampler)
    lags.lags = [WorkerLag(w, "g", []) for w in ("streams", "actions", "sink")]
    cpu = {"streams": 0.0, "actions": 0.0, "sink": 0.0}
    good = report(_options(), stats, lags, [0.2], [0.5], 3.0, PeakRss(), cpu, cpu, 60.0)
    assert good["ok"] and good["realtime_ratio"] == 0.992
    assert good["xid_to_quarantine_p99_ms"] == 200.0 and good["crash_to_restart_p50_ms"] == 500.0
    undecided = report(_options(), stats, lags, [0.2, None], [0.5], 3.0, PeakRss(), cpu, cpu, 60)
    assert not undecided["ok"] and undecided["targets"]["every_fault_decided"] is False
    assert undecided["xids"] == 2 and undecided["xids_decided"] == 1
    slow = report(_options(), stats, lags, [1.2], [0.5], None, PeakRss(), cpu, cpu, 60)
    assert not slow["targets"]["xid_p99"] and not slow["targets"]["drain"]


def test_cpu_is_given_per_second_and_per_event_of_the_fleet() -> None:
    stats = SimStats(ticks=7, events=700, wall_s=60.5, scheduled_s=60.0)
    lags = LagSampler.__new__(LagSampler)
    lags.lags = [WorkerLag("streams", "g", [])]
    before, after = {"streams": 1.0}, {"streams": 1.35}
    result = report(_options(), stats, lags, [0.2], [0.5], 3.0, PeakRss(), before, after, 10.0)
    assert result["workers"]["streams"]["cpu_percent"] == 3.5
    assert result["workers"]["streams"]["cpu_us_per_event"] == 500.0  # 0.35 s over 700 events
