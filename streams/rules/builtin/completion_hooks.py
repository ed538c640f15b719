"""Completion hooks: a job declares at submit time which held jobs to release when it ends
(e.g. an evaluation submitted with `--hold`, released once training succeeded) → ReleaseJob for
each, once per attempt. Declaring a held job is how a follow-up is "submitted" on completion:
the scheduler already has it, with its own resources and permissions, and only waits for a go.
"""

from __future__ import annotations

from collections.abc import Iterator

from schemas.events import JobExited, JobState, ReleaseJob
from schemas.events.jobs import is_failure
from streams.rules.registry import RuleConfig, rule
from streams.state.training_job import TrainingJob

NAME = "completion_hooks"


def _fires(when: str, event: JobExited) -> bool:
    p = event.payload
    if when == "succeeded":
        return p.state is JobState.SUCCEEDED
    if when == "failed":
        return is_failure(p)
    return p.state is not JobState.PREEMPTED  # "ended": anything but a preemption comes back


@rule(NAME, on=(JobExited,), config=RuleConfig)
def completion_hooks(
    job: TrainingJob, event: JobExited, config: RuleConfig
) -> Iterator[ReleaseJob]:
    attempt = event.payload.attempt
    for hook in job.hooks:
        if not _fires(hook.when, event):
            continue
        yield ReleaseJob.decide(
            cause=event,
            source=f"rule/{NAME}",
            subject=hook.release,
            rule=NAME,
            window=f"{job.job_id}/attempt-{attempt}",
            reason=f"{job.job_id} attempt {attempt} ended {event.payload.state.value}: "
            f"its {hook.when} hook releases {hook.release}",
            severity=config.severity,
            after=job.job_id,
        )
