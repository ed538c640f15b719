"""ETTR: productive time over wall time, per job and GPU-weighted per cluster, from events."""

from __future__ import annotations

from datetime import timedelta

import pytest

from schemas.envelope import Event
from schemas.events import JobSubmitted
from streams.analysis.goodput import by_cluster, fold, job_time
from streams.analysis.replay.rerun import current_brain, rerun
from streams.testing import T0, checkpoint, completed, ended, envelope, running

JOB = "slurm/test/1"


def submitted(job: str, gpus: int, at_s: float = 0.0) -> JobSubmitted:
    return JobSubmitted(**envelope(job, at_s), payload={"name": job, "gpus_requested": gpus})


def a_restarted_job(job: str = JOB, gpus: int = 16) -> list[Event]:
    """Checkpoints at 10 and 20 min, fails at 25, runs again at 30, checkpoints at 40 and
    completes at 50 min."""
    return [
        submitted(job, gpus, -60),
        running(job, 1, 0),
        checkpoint(1, job, 600),
        checkpoint(2, job, 1200),
        ended(job, "FAILED", 1, 1500),
        running(job, 2, 1800),
        checkpoint(3, job, 2400),
        completed(job, 2990),
        ended(job, "SUCCEEDED", 2, 3000, exit_code=0),
    ]


def test_a_job_s_wall_time_is_cut_into_productive_and_lost() -> None:
    job = fold(a_restarted_job())[JOB]
    t = job_time(job, T0 + timedelta(hours=5))  # long after it ended: its time stopped there
    # Productive: 0→10→20 min, 30→40 min, and 40→50 min (completed); lost: the 5 minutes after
    # the last checkpoint before the failure, and the 5 minutes' gap to the next attempt.
    assert (t.productive_s, t.lost_s, t.open_s) == (2400, 600, 0)
    assert t.wall_s == 3000 and t.ettr == pytest.approx(0.8) and t.gpus == 16


def test_time_not_decided_yet_counts_in_the_wall_time() -> None:
    events = a_restarted_job()
    running_now = fold(events[:4])[JOB]  # running, last checkpoint at 20 min
    t = job_time(running_now, T0 + timedelta(minutes=23))
    assert (t.productive_s, t.lost_s, t.open_s) == (1200, 0, 180)
    waiting = fold(events[:5])[JOB]  # failed at 25 min, not started again
    t = job_time(waiting, T0 + timedelta(minutes=29))
    assert (t.productive_s, t.lost_s, t.open_s) == (1200, 300, 240)
    assert t.ettr == pytest.approx(1200 / 1740)


def test_the_accounting_is_the_live_brain_s() -> None:
    events = a_restarted_job()
    brain = current_brain()
    rerun(events, brain, 5.0)
    live, folded = brain.jobs[JOB], fold(events)[JOB]
    # The brain's job also holds its own decisions (the restart it asked for) and rule memos.
    assert (live.productive_s, live.lost_s, live.gpus, live.attempts) == (
        folded.productive_s,
        folded.lost_s,
        folded.gpus,
        folded.attempts,
    )


def test_a_cluster_weighs_each_job_by_its_gpus() -> None:
    big = a_restarted_job("slurm/test/big", gpus=24)  # ETTR 0.8
    small = [
        submitted("slurm/test/small", 8, -10),
        running("slurm/test/small", 1, 0),
        checkpoint(1, "slurm/test/small", 3000),
        completed("slurm/test/small", 2999),
        ended("slurm/test/small", "SUCCEEDED", 1, 3000, exit_code=0),
    ]  # ETTR 1.0
    jobs = fold([*big, *small])
    times = [job_time(j, T0 + timedelta(hours=1)) for j in jobs.values()]
    [(cluster, figure)] = by_cluster(times).items()
    assert cluster == "test" and figure.jobs == 2
    assert figure.ettr == pytest.approx((24 * 2400 + 8 * 3000) / (24 * 3000 + 8 * 3000))
    assert figure.lost_gpu_s == 24 * 600
