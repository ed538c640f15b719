"""What the hostile bench concludes from what it reads: the story's decision, a group's
consumption or stall, peak memory, and the targets."""

from __future__ import annotations

import io
import os
import time

import pytest
from aiokafka import ConsumerRecord, TopicPartition
from rich.console import Console

from centrality.bench.hostile import Options
from centrality.bench.hostile_report import Outcome, print_outcome
from centrality.bench.hostile_watch import Group, PeakRss, StoryWatch, growth
from schemas.codec import encode
from schemas.events import ActionSucceeded, RestartJob
from schemas.runtime.settings import KafkaSettings
from tests.factories import restarted
from tests.support.triggers import restart

JOB = "slurm/test/story"
OPTS = Options(
    messages=1, timeout_s=1, stall_s=10, story_timeout_s=1, stop_timeout_s=1, ready_timeout_s=1
)


def _record(key: str, value: bytes) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord("t", 0, 0, 0, 0, key.encode(), value, None, 0, len(value), ())


def _story() -> tuple[RestartJob, ActionSucceeded]:
    trigger = restart(JOB)
    return trigger, restarted(trigger)


def test_the_story_is_decided_whichever_topic_is_read_first() -> None:
    trigger, result = _story()
    for order in ((trigger, result), (result, trigger)):
        watch = StoryWatch(KafkaSettings(), JOB, {})
        for i, event in enumerate(order):
            assert watch.decided_at is None
            watch._see(_record(JOB, encode(event)), now=float(i))
        assert watch.trigger_id == trigger.event_id
        assert watch.decided_at == 1.0


def test_a_result_for_another_trigger_decides_nothing() -> None:
    trigger, result = _story()
    other = result.model_copy(
        update={"payload": result.payload.model_copy(update={"trigger_id": result.event_id})}
    )
    watch = StoryWatch(KafkaSettings(), JOB, {})
    watch._see(_record(JOB, encode(trigger)), now=0.0)
    watch._see(_record(JOB, encode(other)), now=1.0)
    watch._see(_record(JOB, b"\xff garbage"), now=2.0)
    assert watch.decided_at is None


def test_a_group_is_done_at_the_ends_and_stalled_when_it_stops_moving() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    group = Group("streams", "g", {a: 5, b: 0}, moved_at=0.0)
    group.update({a: 3, b: -1}, now=1.0)  # -1: nothing committed on an empty partition
    assert group.consumed_at is None and group.lag == 2
    assert not group.stalled(10.0, stall_s=10) and group.stalled(11.5, stall_s=10)
    group.update({a: 5, b: -1}, now=12.0)
    assert group.consumed_at == 12.0 and group.lag == 0
    assert not group.stalled(100.0, stall_s=10), "a consumed group is not wedged"


def test_a_group_s_worker_cpu_is_read_when_it_is_first_seen_consumed() -> None:
    """The storm's CPU a record is read at the moment the group caught up, not at the end of
    the bench (a worker spends CPU on the story and its idle loop after)."""
    tp = TopicPartition("t", 0)
    group = Group("streams", "g", {tp: 5}, pid=os.getpid())
    group.update({tp: 4}, now=1.0)
    assert group.cpu_at_consumed_s is None
    group.update({tp: 5}, now=2.0)
    first = group.cpu_at_consumed_s
    assert first is not None and first > 0
    busy_until = time.process_time() + 0.05
    while time.process_time() < busy_until:
        pass
    group.update({tp: 6}, now=3.0)
    assert group.cpu_at_consumed_s == first


def test_a_storm_record_s_cpu_is_the_worker_s_cpu_over_the_records_it_read() -> None:
    outcome = Outcome(messages=10, opts=OPTS)
    outcome.storm_read = {"streams": 4000, "actions": 0, "sink": 8000}
    outcome.storm_cpu_s = {"streams": 2.0, "actions": 0.1, "sink": None}
    assert outcome.cpu_ms_per_message() == {"streams": 0.5, "actions": None, "sink": None}
    assert outcome.to_json()["storm_cpu_ms_per_message"]["streams"] == 0.5


def test_targets() -> None:
    good = Outcome(messages=1, opts=OPTS, warmup_decided_s=1.0)
    good.sent.send_s = 1.0
    good.alive = dict.fromkeys(("streams", "actions", "sink"), True)
    good.consumed_s = dict.fromkeys(good.alive, 1.0)
    good.decided_after_storm_s = 4.9
    good.unsigned_obeyed = 0
    good.stop_s = dict.fromkeys(good.alive, 9.9)
    assert good.ok
    for change in (
        {"alive": {**good.alive, "actions": False}},
        {"consumed_s": {**good.consumed_s, "streams": None}},
        {"decided_after_storm_s": 5.1},
        {"decided_after_storm_s": None},
        {"unsigned_obeyed": 1},
        {"stop_s": {**good.stop_s, "streams": None}},
        {"stop_s": {**good.stop_s, "sink": 10.5}},
        {"warmup_decided_s": None},
    ):
        bad = Outcome(**{**good.__dict__, **change})
        assert not bad.ok, change


def test_a_soak_reads_each_worker_s_memory_each_minute_and_its_growth_after_ten() -> None:
    rss = PeakRss(every_s=0.0)  # a point every sample
    me = {"bench": os.getpid()}
    rss.sample(me)
    rss.sample(me)
    [points] = rss.curve_mb().values()
    assert len(points) == 2 and all(p > 0 for p in points)
    assert rss.peak_mb()["bench"] >= max(points)  # the high-water mark, never below
    warm = [50.0, 90.0, 120.0] + [100.0] * 8  # minutes 0 to 10: the warm-up's peak is its own
    assert growth([*warm, 104.0, 103.0]) == 0.04  # from minute 10 to its highest since
    assert growth([100.0, 150.0] * 5 + [100.0, 130.0]) == 0.3
    assert growth([100.0] * 10) is None  # never got past the warm-up


def test_each_minute_s_point_is_its_crest_so_a_sawtooth_is_not_read_as_growth(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = iter([0.0, 0.0, 20.0, 40.0, 61.0, 80.0, 121.0])  # the first: PeakRss starts its clock
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    rss_kb = iter([100, 150, 110, 120, 140, 130])  # freed memory handed back between samples
    read = {"VmHWM": lambda: 150 * 1024, "VmRSS": lambda: next(rss_kb) * 1024}
    monkeypatch.setattr(PeakRss, "_kb", staticmethod(lambda pid, field: read[field]()))
    rss = PeakRss(every_s=60.0)
    for _ in range(6):
        rss.sample({"streams": 1})
    # the first sample, then the highest of each minute: never the trough that ended it
    assert rss.curve_mb() == {"streams": [100.0, 150.0, 140.0]}


def test_each_worker_s_figures_are_whole_in_an_80_column_pipe() -> None:
    """A column a figure squeezed nine of them into '…' cells at 80 columns."""
    outcome = Outcome(messages=20_000, opts=OPTS, warmup_decided_s=2.5, ready_s=3.9)
    names = ("streams", "actions", "sink")
    outcome.alive = dict.fromkeys(names, True)
    outcome.consumed_s = {"streams": 12.25, "actions": 6.16, "sink": 4.35}
    outcome.storm_read = {"streams": 13_206, "actions": 3_745, "sink": 20_300}
    outcome.storm_cpu_s = {"streams": 8.35, "actions": 2.9, "sink": 2.72}
    outcome.peak_rss_mb = {"streams": 184.2, "actions": 88.5, "sink": 364.2}
    outcome.wedged = ["actions"]
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False)
    print_outcome(outcome, json=False, console=console, progress=console)
    text = out.getvalue()
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if line.count("│") == 5}
    assert [c.strip() for c in rows["storm records read"].split("│")[2:5]] == [
        "13206",
        "3745",
        "20300",
    ]
    assert [c.strip() for c in rows["CPU ms a storm record"].split("│")[2:5]] == [
        "0.632",
        "0.774",
        "0.134",
    ]
    assert [c.strip() for c in rows["wedged"].split("│")[2:5]] == ["no", "yes", "no"]
    assert [c.strip() for c in rows["stop s"].split("│")[2:5]] == ["-", "-", "-"]  # not timed
    assert "…" not in "".join(rows.values())
