"""Effective training time ratio (ETTR) per job and per cluster, from the jobs' own events.

A job's wall time runs from its first attempt's start to its end for good (succeeded, completed,
cancelled) or, while it is not over, to the instant asked about. It is cut without remainder
into (docs/goodput.md):

- *productive*: running time whose work was kept: from an attempt's start (or its previous
  checkpoint) to each checkpoint, and to the end of an attempt that logged its completion;
- *lost*: running time whose work was thrown away (from the last checkpoint to a failure, a
  preemption or an exit without completion) and the time between an attempt's end and the
  next attempt's start (the restart gap and the re-queue wait);
- *open*: not decided yet: a running attempt's work since its last checkpoint (lost if it fails,
  productive once saved), or the wait of a job whose last attempt failed and which has not
  started again.

ETTR = productive / wall. Per cluster, each job weighs its GPUs: the share of GPU time that was
productive. The accounting is `streams.state.training_job`'s fold, the one the live worker
keeps and `centrality jobs` shows, so the figures here and there cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from schemas.envelope import Event
from schemas.events import JobState
from streams.history.query import event_time_key
from streams.state import training_job
from streams.state.entities import JOBS
from streams.state.training_job import TrainingJob

# A job that never said how many GPUs it holds weighs this many per node: the usual 8-GPU node.
NODE_GPUS_ASSUMED = 8
_OVER = frozenset({JobState.SUCCEEDED, JobState.CANCELLED})


@dataclass(frozen=True)
class JobTime:
    job_id: str
    cluster: str
    gpus: int
    productive_s: float
    lost_s: float
    open_s: float

    @property
    def wall_s(self) -> float:
        return self.productive_s + self.lost_s + self.open_s

    @property
    def ettr(self) -> float | None:
        return self.productive_s / self.wall_s if self.wall_s > 0 else None


@dataclass(frozen=True)
class Ettr:
    """A group of jobs' time, each second weighed by the job's GPUs."""

    jobs: int
    productive_gpu_s: float
    lost_gpu_s: float
    open_gpu_s: float

    @property
    def wall_gpu_s(self) -> float:
        return self.productive_gpu_s + self.lost_gpu_s + self.open_gpu_s

    @property
    def ettr(self) -> float | None:
        return self.productive_gpu_s / self.wall_gpu_s if self.wall_gpu_s > 0 else None


def over(job: TrainingJob) -> bool:
    """Ended for good: nothing after it is the job's time."""
    last = job.attempts[-1] if job.attempts else None
    ended = job.state in _OVER or (last is not None and last.completed)
    return ended and job.running_since is None


def job_time(job: TrainingJob, at: datetime) -> JobTime:
    """The job's time up to `at` (its folded state must not be later than `at`)."""
    open_s = 0.0
    if job.running and job.progress_at is not None:
        open_s = (at - job.progress_at).total_seconds()  # work not saved yet
    elif job.attempts and not over(job) and job.ended_at is not None:
        open_s = (at - job.ended_at).total_seconds()  # failed, not started again yet
    gpus = job.gpus or NODE_GPUS_ASSUMED * len(job.nodes)
    return JobTime(job.job_id, job.cluster, gpus, job.productive_s, job.lost_s, max(0.0, open_s))


def fold(events: Iterable[Event]) -> dict[str, TrainingJob]:
    """The jobs the events tell of, folded as the live worker folds them, in event-time order
    (events of other kinds are left out)."""
    jobs: dict[str, TrainingJob] = {}
    for event in sorted((e for e in events if type(e) in JOBS.owns), key=event_time_key):
        jobs[event.subject] = training_job.apply(jobs.get(event.subject), event)
    return jobs


def ettr(times: Iterable[JobTime]) -> Ettr:
    jobs, productive, lost, open_ = 0, 0.0, 0.0, 0.0
    for t in times:
        jobs += 1
        productive += t.gpus * t.productive_s
        lost += t.gpus * t.lost_s
        open_ += t.gpus * t.open_s
    return Ettr(jobs, productive, lost, open_)


def by_cluster(times: Iterable[JobTime]) -> dict[str, Ettr]:
    grouped: dict[str, list[JobTime]] = {}
    for t in times:
        grouped.setdefault(t.cluster, []).append(t)
    return {cluster: ettr(group) for cluster, group in sorted(grouped.items())}
