"""An attempt that ended without logging its completion, and was not cancelled, is restarted
from the last checkpoint — at most `max_restarts` times, and not again within `backoff_s` of
the previous restart (a job crashing right after each restart is left for a person).

Completion is per attempt: a completion line of an earlier attempt does not spare a later
attempt's crash. An attempt that ended SUCCEEDED (exit 0) without its completion line is left
alone by default: its trainer may simply print another line, and restarting it would redo
finished work. `on_success_without_marker: restart` treats it as a silent death instead.

An attempt the scheduler itself followed with another (`requeued`: Slurm requeued it, or a
watcher seeing the job for the first time tells of its earlier attempts) is not restarted: the
job went on, and a requeue now would end the attempt that followed, or bring back a job someone
cancelled since.

A restart avoids the nodes quarantines took out while the job ran or failed there (fatal XIDs,
failed health checks, repeated failures on a node set: `TrainingJob.implicated`): the decision
names them in `exclude_nodes`, and the requeue keeps the job off them (docs/remediation.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from pydantic import Field

from schemas.events import JobExited, JobExitedPayload, JobState, RestartJob, trigger_id
from streams.rules.registry import RuleConfig, rule
from streams.state.training_job import TrainingJob

NAME = "restart_incomplete_exit"


class RestartIncompleteConfig(RuleConfig):
    max_restarts: int = Field(default=3, ge=0, description="Attempts beyond this are left alone.")
    backoff_s: float = Field(
        default=0.0, ge=0, description="No restart within this long after the previous one."
    )
    on_success_without_marker: Literal["leave", "restart"] = Field(
        default="leave",
        description="An attempt that ended SUCCEEDED (exit 0) without its completion line: "
        "leave it (it probably finished) or restart it (it probably died quietly).",
    )


def _succeeded(p: JobExitedPayload) -> bool:
    return p.state is JobState.SUCCEEDED or (p.state is JobState.UNKNOWN and p.exit_code == 0)


def implicated_in(job: TrainingJob, attempt: int) -> tuple[str, ...]:
    """The nodes quarantines took out during `attempt` (from the end of the attempt before it):
    what its failure implicated, and so what its restart avoids."""
    earlier = [a.ended_at for a in job.attempts if a.number < attempt]
    since = max(earlier, default=None)
    return tuple(sorted({i.node for i in job.implicated if since is None or i.at > since}))


@rule(NAME, on=(JobExited,), config=RestartIncompleteConfig)
def restart_incomplete_exit(
    job: TrainingJob, event: JobExited, config: RestartIncompleteConfig
) -> Iterator[RestartJob]:
    p = event.payload
    if p.state is JobState.CANCELLED or p.requeued or job.completed(p.attempt):
        return
    if _succeeded(p) and config.on_success_without_marker == "leave":
        return
    if p.attempt > config.max_restarts:
        return
    mine = trigger_id("RestartJob", NAME, event.subject, f"attempt-{p.attempt}")
    if any(r.attempt == p.attempt and r.trigger_id != mine for r in job.restarts):
        return  # restarted while it ran (a slow node moved off): this exit is that requeue's
    earlier = [r.at for r in job.restarts if r.attempt < p.attempt]
    if earlier and (event.occurred_at - max(earlier)).total_seconds() < config.backoff_s:
        return
    where = (
        f"checkpoint step {job.last_checkpoint_step}"
        if job.last_checkpoint_uri
        else "scratch (no checkpoint seen)"
    )
    avoid = implicated_in(job, p.attempt)
    if avoid:
        where += f", avoiding {', '.join(avoid)}"
    yield RestartJob.decide(
        cause=event,
        source=f"rule/{NAME}",
        rule=NAME,
        window=f"attempt-{p.attempt}",
        reason=f"attempt {p.attempt} ended {p.state.value} (exit {p.exit_code}) without "
        f"its completion line; restart from {where}",
        severity=config.severity,
        checkpoint_uri=job.last_checkpoint_uri,
        checkpoint_step=job.last_checkpoint_step,
        attempt=p.attempt,
        exclude_nodes=avoid,
    )
