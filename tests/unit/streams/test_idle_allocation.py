"""Idle allocations: GPUs held by a job at ~0% utilisation for longer than the limit."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from schemas.events import CancelJob, Notify, Trigger
from streams.brain.process import Brain
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.state import node as node_state
from streams.testing import T0, ended, running, sample

JOB = "slurm/test/7"
HOUR = 3600.0


def brain(**config: Any) -> Brain:
    return Brain(RuleEngine.load(StreamsSettings().rule_modules, {"idle_allocation": config}))


def samples(b: Brain, at_s: float, util: float, gpus: int = 2) -> list[Trigger]:
    out: list[Trigger] = []
    for gpu in range(gpus):
        out += b.handle(sample("n1", gpu=gpu, at_s=at_s, utilization_pct=util))
    return idle(out)


def idle(triggers: list[Trigger]) -> list[Trigger]:
    return [t for t in triggers if t.payload.rule == "idle_allocation"]


def test_a_job_idling_past_the_limit_is_flagged_once_per_attempt() -> None:
    b = brain(idle_s=HOUR)
    b.handle(running(JOB, nodes=("n1",), at_s=0))
    assert samples(b, 10, 0.0) == []
    assert samples(b, HOUR, 0.0) == []  # idle since 10 s: not yet an hour
    [notify] = samples(b, HOUR + 10, 0.0)
    assert isinstance(notify, Notify) and notify.subject == JOB and notify.key == JOB.encode()
    assert notify.payload.job_id == JOB and notify.payload.nodes == ("n1",)
    assert "60 min" in notify.payload.reason
    assert samples(b, HOUR + 20, 0.0) == []  # the same decision is not made twice
    assert idle(b.tick(T0 + timedelta(seconds=2 * HOUR))) == []  # nor on a later clock tick


def test_a_clock_tick_flags_a_node_whose_gpus_went_silent_while_idle() -> None:
    b = brain(idle_s=HOUR)
    b.handle(running(JOB, nodes=("n1",), at_s=0))
    samples(b, 10, 0.0)
    [notify] = idle(b.tick(T0 + timedelta(seconds=HOUR + 15)))
    assert notify.subject == JOB and notify.payload.rule == "idle_allocation"


def test_one_working_gpu_means_the_allocation_is_not_idle() -> None:
    b = brain(idle_s=HOUR)
    b.handle(running(JOB, nodes=("n1",), at_s=0))
    samples(b, 10, 0.0)
    b.handle(sample("n1", gpu=1, at_s=20, utilization_pct=87.0))
    assert b.nodes["n1"].idle_since is None
    assert samples(b, HOUR + 30, 0.0) == []  # idle again only since HOUR + 30
    assert len(samples(b, 2 * HOUR + 30, 0.0)) == 1


def test_idle_time_before_the_job_started_is_not_its_fault() -> None:
    b = brain(idle_s=HOUR)
    samples(b, 0, 0.0)
    b.handle(running(JOB, nodes=("n1",), at_s=HOUR))
    assert samples(b, HOUR + 60, 0.0) == []
    assert len(samples(b, 2 * HOUR + 1, 0.0)) == 1


def test_clusters_that_opt_in_also_cancel_and_ended_jobs_are_left_alone() -> None:
    b = brain(idle_s=60, cancel_clusters=["test"])
    b.handle(running(JOB, nodes=("n1",), at_s=0))
    samples(b, 0, 0.5)
    decided = samples(b, 61, 0.5)
    assert sorted(t.type for t in decided) == ["CancelJob", "Notify"]
    [cancel] = [t for t in decided if isinstance(t, CancelJob)]
    assert cancel.subject == JOB
    other = brain(idle_s=60, cancel_clusters=["prod"])
    other.handle(running(JOB, nodes=("n1",), at_s=0))
    samples(other, 0, 0.0)
    other.handle(ended(JOB, nodes=("n1",), at_s=30))
    assert samples(other, 120, 0.0) == []


def test_steady_idle_or_busy_samples_write_nothing() -> None:
    state = node_state.apply(None, sample("n1", gpu=0, at_s=0, utilization_pct=0.0))
    assert node_state.apply(state, sample("n1", gpu=0, at_s=10, utilization_pct=0.0)) is state
    busy = node_state.apply(state, sample("n1", gpu=0, at_s=20, utilization_pct=50.0))
    assert busy is not state and busy.idle_since is None
    assert node_state.apply(busy, sample("n1", gpu=0, at_s=30, utilization_pct=60.0)) is busy
