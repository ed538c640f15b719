"""A slow node drained from under a running job (`slow_node`'s quarantine, `move_jobs`) → the
job restarts from its last checkpoint without it, at once rather than at its end.

Only once the drain succeeded (a refused or held drain moves nothing), and only while the job
still runs the attempt the node slowed; at most `max_restarts` restarts of the job in all.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from schemas.events import RestartJob
from streams.rules.builtin.restart_incomplete import implicated_in
from streams.rules.registry import RuleConfig, rule
from streams.state.internal import JobNodesImplicated
from streams.state.training_job import TrainingJob

NAME = "restart_off_slow_node"


class RestartOffSlowNodeConfig(RuleConfig):
    max_restarts: int = Field(
        default=3, ge=0, description="A job restarted this many times is not moved again."
    )


@rule(NAME, on=(JobNodesImplicated,), config=RestartOffSlowNodeConfig)
def restart_off_slow_node(
    job: TrainingJob, event: JobNodesImplicated, config: RestartOffSlowNodeConfig
) -> Iterator[RestartJob]:
    p = event.payload
    if not p.move or not job.running or len(job.restarts) >= config.max_restarts:
        return
    avoid = tuple(sorted({*implicated_in(job, job.attempt), *p.nodes}))
    where = f"checkpoint step {job.last_checkpoint_step}" if job.last_checkpoint_uri else "scratch"
    yield RestartJob.decide(
        cause=event,
        source=f"rule/{NAME}",
        rule=NAME,
        window=f"attempt-{job.attempt}",
        reason=f"{', '.join(p.nodes)} drained for slowing it: restart from {where} without them",
        severity=config.severity,
        checkpoint_uri=job.last_checkpoint_uri,
        checkpoint_step=job.last_checkpoint_step,
        attempt=job.attempt,
        exclude_nodes=avoid,
    )
