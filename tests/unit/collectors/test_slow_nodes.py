"""Slow but alive nodes in the simulator: a node's GPUs throttle for a spell, every host of a job
there reports its step times, the job runs at the slow node's pace, and what automation does
about it (a checkpoint asked for now, a requeue of the running job) happens to the job."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from collectors.simulate.config import SimConfig
from collectors.simulate.model import ClusterModel
from collectors.simulate.slow import THROTTLES
from schemas.envelope import Event
from schemas.events import (
    CheckpointSaved,
    GpuSampled,
    JobExited,
    JobState,
    JobStateChanged,
    StepTimesObserved,
)

START = datetime(2026, 3, 1, tzinfo=UTC)
FACTOR = 1.6
SLOW_FROM = 60.0


def slow_fleet(**config: object) -> ClusterModel:
    """Two nodes, one job on both from 0 s, and one spell of FACTOR drawn to begin within the
    first second (so at the tick of SLOW_FROM s) and last an hour, on a node the seed draws."""
    settings = {
        "nodes": 2,
        "gpus": 2,
        "jobs": 1,
        "nodes_per_job": (2, 2),
        "job_duration_s": (7200.0, 7200.0),
        "checkpoint_every_s": 600.0,
        "interval_s": 60.0,
        "slow_nodes": 1,
        "slow_factor": (FACTOR, FACTOR),
        "slow_duration_s": (3600.0, 3600.0),
        "horizon_s": 1.0,
    }
    return ClusterModel(SimConfig.model_validate(settings | config), START)


def run(model: ClusterModel, from_s: float, until_s: float, step_s: float = 60.0) -> list[Event]:
    out, t = [], from_s
    while t <= until_s:
        out += model.tick(t)
        t += step_s
    return out


def test_spells_are_drawn_from_the_seed_within_their_bounds() -> None:
    config = SimConfig(nodes=50, slow_nodes=20, horizon_s=86_400.0)
    spells = ClusterModel(config, START).spells
    assert spells == ClusterModel(config, START).spells and len(spells) == 20
    assert spells != ClusterModel(config.model_copy(update={"seed": 1}), START).spells
    assert [s.at_s for s in spells] == sorted(s.at_s for s in spells)
    for s in spells:
        assert 1.3 <= s.factor <= 2.0 and 60.0 <= s.until_s - s.at_s <= 36_000.0
        assert s.reason in THROTTLES
    with pytest.raises(ValueError, match="factor >= 1"):
        SimConfig(slow_factor=(0.5, 2.0))


def test_a_slow_node_s_gpus_throttle_while_its_spell_lasts() -> None:
    model = slow_fleet()
    spell = model.spells[0]
    model.tick(0.0)
    during = [e for e in run(model, 60.0, 120.0) if isinstance(e, GpuSampled)]
    slow = [e.payload for e in during if e.subject == spell.node]
    assert slow and all(p.throttle_reasons == (spell.reason,) for p in slow)
    assert all((p.sm_clock_mhz or 0) < 0.6 * 1980 for p in slow)
    assert all(not e.payload.throttle_reasons for e in during if e.subject != spell.node)
    assert model.unhealthy() == {
        spell.node: f"throttled ({spell.reason}): benchmark below thresholds"
    }
    after = [e.payload for e in run(model, 180.0, 3720.0) if isinstance(e, GpuSampled)]
    assert not model.slow and not model.unhealthy()
    assert not after[-1].throttle_reasons and after[-1].sm_clock_mhz == 1980
    assert any(f.subject == spell.node and f.how.startswith("slow") for f in model.faulted)


def test_every_host_reports_its_step_times_and_the_slow_one_stands_out() -> None:
    model = slow_fleet()
    spell = model.spells[0]
    steps = [e for e in run(model, 0.0, 600.0) if isinstance(e, StepTimesObserved)]
    assert len(steps) == 2 * 10  # both hosts, each tick after the job started
    first = [e.payload for e in steps[:2]]  # over (0, 60 s], before the spell began
    assert [p.steps for p in first] == [60, 60]
    assert all(p.median_s == pytest.approx(1.0, rel=0.04) for p in first)
    for e in steps[2:]:
        p = e.payload
        healthy = FACTOR if p.node == spell.node else 1.0
        assert p.median_s == pytest.approx(healthy, rel=0.04) and p.max_s > p.median_s
        assert p.steps == pytest.approx(60 / FACTOR, abs=1)  # the job's pace is the slow node's
    assert {e.subject for e in steps} == {"slurm/sim/1"}


def test_no_step_times_without_slow_nodes() -> None:
    model = slow_fleet(slow_nodes=0)
    assert not [e for e in run(model, 0.0, 600.0) if isinstance(e, StepTimesObserved)]


def test_a_job_on_a_slow_node_runs_at_its_pace_and_loses_what_slowness_cost_once_saved() -> None:
    model = slow_fleet()
    events = run(model, 0.0, 3600.0)
    saved = [e for e in events if isinstance(e, CheckpointSaved)]
    # Checkpoints every 600 s of work: at FACTOR, every 960 s of running time.
    assert [e.occurred_at.timestamp() - START.timestamp() for e in saved] == [960, 1920, 2880]
    job = model.jobs["slurm/sim/1"]
    assert job.progress_s(3600.0) == pytest.approx(SLOW_FROM + (3600 - SLOW_FROM) / FACTOR)
    # Saved at 2880 s: its running time since SLOW_FROM did 1/FACTOR of its work; 4 GPUs.
    lost = (2880 - SLOW_FROM) * (1 - 1 / FACTOR) * 4
    assert model.slow_lost_gpu_s == {job.id: pytest.approx(lost)}
    # The spell is over (at the tick after its hour): the rest runs at a healthy pace, and the
    # job ends that much later.
    ended = [e for e in run(model, 3660.0, 9000.0) if isinstance(e, JobExited)]
    assert ended[0].payload.state is JobState.SUCCEEDED
    ran_s = ended[0].occurred_at.timestamp() - START.timestamp()
    assert ran_s == pytest.approx(7200 + 3600 * (1 - 1 / FACTOR), abs=60)
    assert model.slow_lost_gpu_s[job.id] == pytest.approx(3600 * (1 - 1 / FACTOR) * 4)


def test_a_checkpoint_asked_for_is_written_at_the_next_tick() -> None:
    model = slow_fleet(slow_nodes=0)
    run(model, 0.0, 300.0)
    model.checkpoint("slurm/sim/1")
    model.checkpoint("slurm/sim/404")  # no such job: nothing to ask
    [saved] = [e for e in model.tick(360.0) if isinstance(e, CheckpointSaved)]
    assert saved.payload.step == 360 and model.jobs["slurm/sim/1"].saved_s == 360.0
    # Asked once: the periodic ones go on as before.
    later = [e.payload.step for e in run(model, 420.0, 1200.0) if isinstance(e, CheckpointSaved)]
    assert later == [600, 1200]


def test_a_running_job_requeued_loses_its_work_since_the_checkpoint_and_avoids_the_node() -> None:
    model = slow_fleet(nodes=3, slow_nodes=0, restart_s=300.0)
    run(model, 0.0, 900.0)
    job = model.jobs["slurm/sim/1"]
    first = job.nodes
    assert job.saved_s == 600.0 and job.progress_s(900.0) == 900.0
    out = model.requeue(job.id, avoid=[first[0]])
    exited = [e.payload for e in out if isinstance(e, JobExited)]
    assert [(p.state, p.raw_state, p.attempt) for p in exited] == [
        (JobState.PREEMPTED, "REQUEUED", 1)
    ]
    states = [(e.payload.state, e.payload.attempt) for e in out if isinstance(e, JobStateChanged)]
    assert states == [(JobState.PENDING, 2)]  # not at once: its way back takes restart_s
    assert all(model.nodes[n].job is None for n in first)
    assert model.requeue(job.id) == []  # pending already: nothing to requeue
    started = [e for e in run(model, 960.0, 1500.0) if isinstance(e, JobStateChanged)]
    [running] = [e.payload for e in started if e.payload.state is JobState.RUNNING]
    assert running.attempt == 2 and first[0] not in running.nodes
    assert started[0].occurred_at.timestamp() - START.timestamp() == 1200.0
    assert job.progress_s(1200.0) == 600.0  # from its checkpoint: 300 s of work lost


def test_a_requeue_of_a_job_that_is_not_running_or_failed_does_nothing() -> None:
    model = slow_fleet(slow_nodes=0)
    assert model.requeue("slurm/sim/1") == []  # not submitted yet
