"""A job that ended without saying `Training Complete`, and was not cancelled, is restarted
from its last checkpoint — at most `max_restarts` times, and not again within `backoff_s` of
the previous restart (a job crashing right after each restart is left for a person).
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from schemas.events import JobExited, JobState, RestartJob
from streams.rules.registry import RuleConfig, rule
from streams.state.training_job import TrainingJob

NAME = "restart_incomplete_exit"


class RestartIncompleteConfig(RuleConfig):
    max_restarts: int = Field(default=3, ge=0, description="Attempts beyond this are left alone.")
    backoff_s: float = Field(
        default=0.0, ge=0, description="No restart within this long after the previous one."
    )


@rule(NAME, on=(JobExited,), config=RestartIncompleteConfig)
def restart_incomplete_exit(
    job: TrainingJob, event: JobExited, config: RestartIncompleteConfig
) -> Iterator[RestartJob]:
    p = event.payload
    if p.state is JobState.CANCELLED or job.completion_seen:
        return
    if p.attempt > config.max_restarts:
        return
    earlier = [r.at for r in job.restarts if r.attempt < p.attempt]
    if earlier and (event.occurred_at - max(earlier)).total_seconds() < config.backoff_s:
        return
    where = (
        f"checkpoint step {job.last_checkpoint_step}"
        if job.last_checkpoint_uri
        else "scratch (no checkpoint seen)"
    )
    yield RestartJob.decide(
        cause=event,
        source=f"rule/{NAME}",
        rule=NAME,
        window=f"attempt-{p.attempt}",
        reason=f"attempt {p.attempt} ended {p.state.value} (exit {p.exit_code}) without "
        f"'Training Complete'; restart from {where}",
        severity=config.severity,
        checkpoint_uri=job.last_checkpoint_uri,
        checkpoint_step=job.last_checkpoint_step,
        attempt=p.attempt,
    )
