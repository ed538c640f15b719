"""Slow but alive (issue 43): a node that slows its job is taken out when that costs the job least
(now, at its next checkpoint, after a checkpoint asked for, or left), and the job moves off it."""

from __future__ import annotations

from typing import Any

import pytest

from schemas.events import (
    FleetBaseline,
    Notify,
    QuarantineNodes,
    RequestCheckpoint,
    RestartJob,
    Trigger,
)
from streams.analysis.replay.rerun import compare
from streams.analysis.timed import timed
from streams.analysis.whatif.price import timed_price
from streams.testing import (
    JOB,
    Story,
    benchmark,
    checkpoint,
    collectives_timed,
    ended,
    facts,
    result,
    running,
    sample,
    step_times,
)

HOSTS = ("n1", "n2", "n3", "n4")
GPUS = 32
CADENCE_S = 1800.0
RULES = ("slow_node", "restart_off_slow_node")


def _story(**config: Any) -> Story:
    story = Story(config={"slow_node": config} if config else None)
    story.tell(running(nodes=HOSTS, at_s=0.0))
    return story


def _interval(story: Story, at_s: float, slow: dict[str, float] | None = None) -> list[Trigger]:
    """Each host's step times for the minute ending at `at_s`: 1 s a step, `slow` hosts more."""
    slow = slow or {}
    return story.tell(*(step_times(h, slow.get(h, 1.0), at_s=at_s) for h in HOSTS))


def _run(story: Story, start_s: float, end_s: float, slow: dict[str, float]) -> list[Trigger]:
    out: list[Trigger] = []
    t = start_s
    while t <= end_s:
        out += _interval(story, t, slow)
        t += 60.0
    return out


def _checkpoints(story: Story, *at_s: float) -> None:
    for i, t in enumerate(at_s, start=1):
        story.tell(checkpoint(100 * i, at_s=t))


def _of(decided: list[Trigger], cls: type[Trigger]) -> list[Any]:
    return [t for t in decided if isinstance(t, cls) and t.payload.rule in RULES]


def test_a_host_slowing_mid_interval_is_taken_out_at_the_next_checkpoint_and_the_job_moves() -> (
    None
):
    story = _story()
    _run(story, 60.0, 1800.0, {})
    _checkpoints(story, 1800.0, 3600.0)
    # n3 slows at 4200 s, 600 s into the interval: waiting costs 0.8 of the 1200 s left at 1.8x.
    decided = _run(story, 3660.0, 4140.0, {}) + _run(story, 4200.0, 5000.0, {"n3": 1.8})
    [plan] = _of(decided, Notify)
    timing = plan.payload.timing
    assert timing.chosen == "at_checkpoint" and plan.payload.nodes == ("n3",)
    assert timing.gpu_h.at_checkpoint < timing.gpu_h.now < timing.gpu_h.leave
    assert "out at the job's next checkpoint" in plan.payload.title
    assert not _of(decided, QuarantineNodes)  # not before the checkpoint

    taken = _of(story.tell(checkpoint(300, at_s=5500.0)), QuarantineNodes)
    [drain] = taken
    assert drain.payload.nodes == ("n3",) and drain.payload.jobs == (JOB,)
    assert drain.payload.move_jobs and drain.payload.timing == timing
    assert "at checkpoint step 300" in drain.payload.reason
    assert f"{timing.saved_gpu_h:,.1f} GPU-h saved" in drain.payload.reason

    # Only once the drain succeeded is the job restarted, from that checkpoint, without n3.
    assert not _of(story.tell(result(drain, at_s=5501.0, error="scontrol: refused")), RestartJob)
    [restart] = _of(story.tell(result(drain, at_s=5502.0)), RestartJob)
    assert restart.payload.checkpoint_step == 300 and restart.payload.exclude_nodes == ("n3",)
    # The requeue ends the attempt: that exit is the restart's, not a second one.
    again = story.tell(ended(state="PREEMPTED", attempt=1, at_s=5510.0, nodes=HOSTS))
    assert not [t for t in again if isinstance(t, RestartJob)]
    # The next attempt, without n3, starts afresh: nothing is suspected.
    story.tell(running(attempt=2, at_s=5600.0, nodes=("n1", "n2", "n4", "n5")))
    assert story.jobs[JOB].steps == {} and story.nodes["n3"].slow_plans == {}


def test_right_after_a_checkpoint_taking_it_out_now_costs_least() -> None:
    story = _story()
    _run(story, 60.0, 1800.0, {})
    _checkpoints(story, 1800.0, 3600.0)
    decided = _run(story, 3660.0, 4200.0, {"n2": 1.8})
    [drain] = _of(decided, QuarantineNodes)
    assert drain.payload.timing.chosen == "now" and drain.payload.move_jobs
    assert drain.payload.timing.saved_gpu_h == 0.0
    assert not _of(decided, Notify)


def test_a_job_that_honours_the_hook_is_asked_for_a_checkpoint_then_moved() -> None:
    story = _story(ask_checkpoint=True, signal="USR2")
    _run(story, 60.0, 1800.0, {})
    _checkpoints(story, 1800.0, 3600.0)
    decided = _run(story, 3660.0, 4800.0, {"n4": 2.0})
    [ask] = _of(decided, RequestCheckpoint)
    assert ask.subject == JOB and ask.payload.signal == "USR2" and ask.payload.nodes == ("n4",)
    assert ask.payload.timing.chosen == "ask"
    [drain] = _of(story.tell(checkpoint(250, at_s=4830.0)), QuarantineNodes)
    assert drain.payload.nodes == ("n4",) and drain.payload.timing.chosen == "ask"


def test_a_slight_slowdown_against_a_costly_restart_is_left_and_said_once() -> None:
    story = _story(restart_s=7200.0)
    _run(story, 60.0, 1800.0, {})
    _checkpoints(story, 1800.0, 3600.0)
    decided = _run(story, 3660.0, 6000.0, {"n1": 1.2})
    [left] = _of(decided, Notify)
    assert left.payload.timing.chosen == "leave" and "left in service" in left.payload.title
    assert left.payload.timing.saved_gpu_h > 0
    assert not _of(decided, QuarantineNodes)


def test_a_blip_shorter_than_the_evidence_window_decides_nothing() -> None:
    story = _story()
    _run(story, 60.0, 1800.0, {})
    decided = _run(story, 1860.0, 2040.0, {"n3": 3.0}) + _run(story, 2100.0, 3000.0, {})
    assert not [t for t in decided if t.payload.rule == "slow_node"]


@pytest.mark.parametrize("timing", ["now", "leave"])
def test_a_forced_timing_is_kept(timing: str) -> None:
    story = _story(timing=timing)
    _run(story, 60.0, 1800.0, {})
    _checkpoints(story, 1800.0, 3600.0)
    decided = _run(story, 3660.0, 4800.0, {"n3": 1.8})
    chosen = {t.payload.timing.chosen for t in decided if t.payload.timing is not None}
    assert chosen == {timing}


def _thermal(node: str, at_s: float, gpu: int = 3) -> Any:
    return sample(
        node,
        gpu=gpu,
        at_s=at_s,
        utilization_pct=98.0,
        sm_clock_mhz=1100,
        throttle_reasons=("HwThermalSlowdown",),
    )


def test_gpus_held_back_under_a_job_that_logs_no_step_times_are_priced_by_their_clocks() -> None:
    story = _story()
    story.tell(facts("n2", gpu_model="NVIDIA H100 80GB HBM3"))
    _checkpoints(story, 600.0, 2400.0)
    decided: list[Trigger] = []
    for t in range(3300, 4000, 30):  # 900 s into the interval: 600 s left at 1.8x
        decided += story.tell(_thermal("n2", float(t)))
    [plan] = _of(decided, Notify)
    assert plan.payload.timing.chosen == "at_checkpoint"
    assert "GPU 3 HwThermalSlowdown at 1,100 of 1,980 MHz" in plan.payload.reason
    assert "1.80x slower" in plan.payload.reason
    # The throttle lifts: the node's signs end.
    story.tell(sample("n2", gpu=3, at_s=4100.0, utilization_pct=98.0, sm_clock_mhz=1980))
    assert story.nodes["n2"].slow == {}


def test_gpus_held_back_while_the_job_keeps_its_pace_cost_it_nothing() -> None:
    story = _story()
    story.tell(facts("n2", gpu_model="NVIDIA H100 80GB HBM3"))
    decided: list[Trigger] = []
    for t in range(60, 1500, 60):
        decided += _interval(story, float(t))
        decided += story.tell(_thermal("n2", float(t) + 1))
    assert story.nodes["n2"].slow and story.nodes["n2"].pace[JOB].slowdown == 1.0
    assert not [t for t in decided if t.payload.rule == "slow_node"]


H100 = "NVIDIA H100 80GB HBM3"
PEERS = FleetBaseline(model=H100, window_s=7 * 86400.0, peers=5, matmul_tflops=857.0)


def _benchmarked(story: Story, node: str, tflops: float, at_s: float) -> None:
    """`node`, in service, passed a benchmark of `tflops` on each GPU against PEERS' median."""
    story.tell(
        facts(node, at_s=at_s, gpu_model=H100),
        benchmark(node, at_s=at_s, tflops=tflops, fleet=PEERS),
    )


def test_a_benchmark_behind_its_fleet_makes_a_host_a_little_behind_count() -> None:
    # 1.12x the other hosts: under ratio_min (1.15), so alone it is not the node's doing.
    alone = _story()
    _run(alone, 60.0, 1800.0, {})
    _checkpoints(alone, 1800.0)
    decided = _run(alone, 1860.0, 2700.0, {"n3": 1.12})
    assert not [t for t in decided if t.payload.rule == "slow_node"]
    # The same host on a node that passed its last benchmark at 91 % of its peers' median.
    story = _story()
    _benchmarked(story, "n3", 780.0, at_s=10.0)
    sign = story.nodes["n3"].slow["benchmark:-1"]
    assert sign.slowdown == round(857.0 / 780.0, 3)
    assert sign.said == (
        "benchmark: slowest GPU's matmul 780.0 TFLOP/s = 91% of the median 857.0 of 5 peers"
    )
    _run(story, 60.0, 1800.0, {})
    _checkpoints(story, 1800.0)
    [weighed] = _of(_run(story, 1860.0, 2700.0, {"n3": 1.12}), Notify)
    assert weighed.payload.nodes == ("n3",)
    assert weighed.payload.reason.startswith(
        "n3 slows job slurm/test/42 (steps 1.12x the other hosts'; benchmark: slowest GPU's "
        "matmul 780.0 TFLOP/s = 91% of the median 857.0 of 5 peers); leave it"
    )  # 1.12x over 32 GPUs costs less than a restart: weighed, and left


def test_a_benchmark_behind_its_fleet_alone_takes_nothing_out_and_the_next_one_ends_it() -> None:
    story = _story()
    _benchmarked(story, "n2", 700.0, at_s=10.0)  # 82 % of the median fails: it is no sign
    assert story.nodes["n2"].slow == {} and story.nodes["n2"].last_benchmark_verdict == "fail"
    _benchmarked(story, "n2", 780.0, at_s=20.0)
    _benchmarked(story, "n9", 780.0, at_s=20.0)  # no job on it
    decided = _run(story, 60.0, 1800.0, {})  # n2's host keeps the job's pace
    decided += story.wait(1900.0)  # n9 idle all along
    assert not [t for t in decided if t.payload.rule == "slow_node"]
    _benchmarked(story, "n2", 850.0, at_s=1950.0)  # 99 %: back with its peers
    assert story.nodes["n2"].slow == {} and "benchmark:-1" in story.nodes["n9"].slow


def test_a_slow_node_with_no_job_is_taken_out_at_once_after_the_evidence_window() -> None:
    story = Story()
    story.tell(facts("n9", gpu_model="NVIDIA H100 80GB HBM3"))
    decided: list[Trigger] = []
    for t in range(0, 420, 30):
        decided += story.tell(_thermal("n9", float(t), gpu=0))
    [drain] = [t for t in decided if isinstance(t, QuarantineNodes)]
    assert drain.payload.rule == "slow_node" and drain.payload.timing is None
    assert drain.payload.nodes == ("n9",) and not drain.payload.move_jobs
    assert (
        drain.occurred_at.timestamp() - story.nodes["n9"].slow["thermal:0"].since.timestamp() >= 300
    )


def test_in_shadow_it_decides_and_nothing_is_taken_as_done() -> None:
    story = _story(mode="shadow")
    _run(story, 60.0, 1800.0, {})
    _checkpoints(story, 1800.0, 3600.0)
    decided = _run(story, 3660.0, 4200.0, {"n2": 1.8})
    [drain] = _of(decided, QuarantineNodes)
    assert drain.payload.shadow
    assert story.nodes["n2"].story is None  # nothing taken as done


def test_history_counts_each_timed_decision_once_by_the_way_chosen() -> None:
    story = _story(ask_checkpoint=True)
    _run(story, 60.0, 1800.0, {})
    _checkpoints(story, 1800.0, 3600.0)
    _run(story, 3660.0, 4800.0, {"n4": 2.0})
    story.tell(checkpoint(250, at_s=4830.0))
    [ask] = _of(story.decisions, RequestCheckpoint)
    [drain] = _of(story.decisions, QuarantineNodes)
    assert drain.payload.timing == ask.payload.timing  # the plan and its carrying out
    ways = timed(story.decisions)
    assert set(ways) == {"ask"} and ways["ask"].decisions == 1
    assert ways["ask"].saved_gpu_h == ask.payload.timing.saved_gpu_h > 0
    assert ways["ask"].jobs == [JOB]


def _decided(**config: Any) -> list[Trigger]:
    story = _story(**config)
    _run(story, 60.0, 1800.0, {})
    _checkpoints(story, 1800.0, 3600.0)
    _run(story, 3660.0, 4140.0, {})
    _run(story, 4200.0, 5000.0, {"n3": 1.8})
    story.tell(checkpoint(300, at_s=5500.0))
    return [t for t in story.decisions if t.payload.rule == "slow_node"]


def test_what_if_prices_another_timing_and_leaving_the_node_by_the_rule_s_own_figures() -> None:
    recorded = _decided()  # at the next checkpoint
    [plan] = [t for t in recorded if isinstance(t, Notify)]
    assert plan.payload.timing is not None
    costs = plan.payload.timing.gpu_h.of()
    for candidate, expected in (
        (_decided(timing="now"), costs["now"] - costs["at_checkpoint"]),
        ([], costs["leave"] - costs["at_checkpoint"]),  # slow_node off: the node left
    ):
        priced = [p for d in compare(candidate, recorded) if (p := timed_price(d)) is not None]
        assert sum(p.work_gpu_h for p in priced) == pytest.approx(expected)
    assert not [d for d in compare(recorded, recorded) if d.status != "same"]


def test_in_shadow_a_slow_node_with_no_job_is_decided_once_a_spell() -> None:
    story = Story(config={"slow_node": {"mode": "shadow"}})
    story.tell(facts("n9", gpu_model="NVIDIA H100 80GB HBM3"))
    for t in range(0, 900, 30):
        story.tell(_thermal("n9", float(t), gpu=0))
    [drain] = [t for t in story.decisions if isinstance(t, QuarantineNodes)]
    assert drain.payload.shadow and drain.payload.nodes == ("n9",)


def _in_step(
    story: Story, at_s: float, step_s: float, waited: str | None, **kw: Any
) -> list[Trigger]:
    """A synchronous job's minute: every host logs the same step time (each waits for the
    slowest), and, with `waited`, NCCL Inspector's times say whom they wait for: that host's
    AllReduce takes 2 ms, the others' 40 ms."""
    decided = story.tell(*(step_times(h, step_s, at_s=at_s) for h in HOSTS))
    if waited is not None:
        times = {h: 2_000.0 if h == waited else 40_000.0 for h in HOSTS}
        decided += story.tell(*(collectives_timed(h, t, at_s=at_s, **kw) for h, t in times.items()))
    return decided


def _synchronous(waited: str | None, **kw: Any) -> list[Trigger]:
    story = _story()
    for t in range(60, 3660, 60):
        _in_step(story, float(t), 1.0, None)
        if t % 1800 == 0:
            story.tell(checkpoint(t // 18, at_s=float(t)))
    decided: list[Trigger] = []
    for t in range(3660, 4800, 60):  # the job 1.6x its best pace from here on
        decided += _in_step(story, float(t), 1.6, waited, **kw)
    return decided


def test_the_host_its_peers_wait_for_at_their_collectives_is_the_one_taken_out() -> None:
    decided = _synchronous("n3")
    taken = _of(decided, QuarantineNodes) + _of(decided, Notify)
    assert [t.payload.nodes for t in taken] == [("n3",)]
    reason = taken[0].payload.reason
    assert "the other hosts wait for it at AllReduce: 38.0 ms, their time 20.0x its own" in reason
    assert "the job 1.60x its best pace" in reason


def test_without_a_host_named_a_job_slower_than_its_best_blames_no_node() -> None:
    # Every host logs the same step time: nothing says which one holds the others back.
    assert not [t for t in _synchronous(None) if t.payload.rule in RULES]


@pytest.mark.parametrize(
    "kw",
    [
        {"timing": "collective_cpu"},  # a CPU's span starts when queued: it names no one
        {"comm_nodes": 1},  # a communicator inside one host compares no hosts
    ],
)
def test_collective_times_that_cannot_name_a_host_name_none(kw: dict[str, Any]) -> None:
    assert not [t for t in _synchronous("n3", **kw) if t.payload.rule in RULES]
