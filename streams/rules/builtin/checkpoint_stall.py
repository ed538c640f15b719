"""A running job with no checkpoint for longer than `limit_s` → Notify (checkpoint stall).

Runs on clock ticks (`JobTick`, sent for running jobs only); the stall is measured from the last
checkpoint, or from the attempt's start if it has saved none yet. Once per stall.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from pydantic import Field

from schemas.events import Notify
from streams.rules.registry import RuleConfig, rule
from streams.state.internal import JobTick
from streams.state.training_job import TrainingJob

NAME = "checkpoint_stall"


class CheckpointStallConfig(RuleConfig):
    limit_s: float = Field(default=3600.0, gt=0, description="Longest gap between checkpoints.")


def _basis(job: TrainingJob) -> datetime | None:
    if not job.running or job.running_since is None:
        return None
    return max(filter(None, (job.last_checkpoint_at, job.running_since)))


def stall_over(job: TrainingJob, config: CheckpointStallConfig) -> list[datetime]:
    basis = _basis(job)
    return [] if basis is None else [basis + timedelta(seconds=config.limit_s)]


@rule(NAME, on=(JobTick,), config=CheckpointStallConfig, due=stall_over)
def checkpoint_stall(
    job: TrainingJob, event: JobTick, config: CheckpointStallConfig
) -> Iterator[Notify]:
    basis = _basis(job)
    if basis is None or job.running_since is None:
        return
    if (event.occurred_at - basis).total_seconds() <= config.limit_s:
        return
    yield Notify.decide(
        cause=event,
        source=f"rule/{NAME}",
        rule=NAME,
        window=f"attempt-{job.attempt}/since-{basis.isoformat()}",
        # Event times and settings only: the tick that notices it may come at any instant.
        reason=f"no checkpoint since {basis.isoformat()} (limit {config.limit_s:.0f} s)",
        severity=config.severity,
        caused_by=(),
        title=f"Job {job.job_id}: checkpoint stall",
        text=f"Running since {job.running_since.isoformat()}; last checkpoint "
        f"{job.last_checkpoint_at.isoformat() if job.last_checkpoint_at else 'never'}.",
        incident=f"{NAME}/{job.job_id}/attempt-{job.attempt}",
        nodes=job.nodes,
        job_id=job.job_id,
    )
