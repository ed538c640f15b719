"""A node slow but alive under a running job → take it out when it costs the job least.

A node is slow when its host's step times are `ratio_min` of the job's other hosts' or more, or
when its GPUs say they are held back (throttle, thermal, power, low clocks, corrected-error
bursts, row remaps: `streams.state.slowness`) while the job goes `ratio_min` slower than its best
pace this attempt (or logs no step times at all). Once slow for `evidence_s`, the rule weighs
(`streams.rules.timing`): take it out now, at the job's next checkpoint, after asking the job for
a checkpoint now (`ask_checkpoint`: the job honours the hook, docs/jobs.md), or leave it. The
choice and each figure are in the decision's reason and its `timing`. Taking it out is a
quarantine that moves the job: once the drain succeeded, the job is restarted from its checkpoint
without the node (`move_jobs`). A node with no job is the node rule `slow_idle_node`'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import Field

from schemas.envelope import Event
from schemas.events import (
    CheckpointSaved,
    Notify,
    RequestCheckpoint,
    RestartJob,
    StepTimesObserved,
    Trigger,
)
from schemas.events.triggers import CheckpointSignal, Timing
from streams.rules.builtin.quarantine import quarantine
from streams.rules.builtin.restart_incomplete import implicated_in
from streams.rules.registry import RuleConfig, rule
from streams.rules.timing import Costs, choose, said
from streams.state.internal import JobNodesImplicated, JobNodeSlowed, JobTick
from streams.state.pace import BEHIND, cadence_s, pace_s, slow_since
from streams.state.training_job import TrainingJob

NAME = "slow_node"
FAULT = "slow"


class SlowNodeConfig(RuleConfig):
    timing: Literal["auto", "now", "at_checkpoint", "ask", "leave"] = Field(
        default="auto",
        description="auto: the way of least expected GPU-hours; else always that way (`ask` "
        "without the hook, or `at_checkpoint` before a cadence is known, fall to the cheapest "
        "way that acts).",
    )
    ask_checkpoint: bool = Field(
        default=False,
        description="The jobs this config covers honour the checkpoint hook (docs/jobs.md): "
        "asking them for a checkpoint now is one of the ways.",
    )
    signal: CheckpointSignal = Field(default="USR1", description="The hook's signal.")
    ratio_min: float = Field(
        default=1.15, ge=BEHIND, le=100.0, description="How much slower counts as slow."
    )
    evidence_s: float = Field(
        default=300.0, ge=0, description="How long a node must have been slow before deciding."
    )
    restart_s: float = Field(
        default=600.0, ge=0, description="What a restart costs the job: requeue, start, load."
    )
    checkpoint_write_s: float = Field(
        default=60.0, ge=0, description="What a checkpoint asked for now costs the job."
    )
    leave_s: float = Field(
        default=7200.0,
        gt=0,
        description="How long leaving a slow node is priced over: how long such slowness lasts "
        "(Alibaba's Falcon study: tens of seconds to about ten hours).",
    )
    assumed_slowdown: float = Field(
        default=1.25,
        ge=1.0,
        le=100.0,
        description="The slowdown of a node whose GPUs say they are held back, for a job that "
        "logs no step times, where no clock figure says more.",
    )
    gpus_per_node: int = Field(
        default=8,
        ge=1,
        le=1024,
        description="A job's GPUs where it never said: its nodes times this.",
    )
    max_restarts: int = Field(
        default=3, ge=0, description="A job restarted this many times is not moved again."
    )
    severity: Literal["info", "warning", "critical"] = "warning"


@dataclass(frozen=True)
class Suspect:
    node: str
    slowdown: float
    since: datetime
    said: str


def suspects(job: TrainingJob, config: SlowNodeConfig) -> list[Suspect]:
    """The job's nodes that slow it, slowest first."""
    found = []
    pace, best = pace_s(job.steps), job.pace_best_s
    job_slowdown = pace / best if pace and best else None
    for node in sorted({*job.nodes, *job.steps, *job.slow_nodes}):
        if node in job.slow_taken:
            continue
        one = _suspect(job, node, config, job_slowdown)
        if one is not None:
            found.append(one)
    return sorted(found, key=lambda s: -s.slowdown)


def _suspect(
    job: TrainingJob, node: str, config: SlowNodeConfig, job_slowdown: float | None
) -> Suspect | None:
    signs = job.slow_nodes.get(node)
    told = "; ".join(signs.signs) if signs is not None else ""
    behind = slow_since(job.steps, node, config.ratio_min)
    if behind is not None:
        since, ratio = behind
        words = f"steps {ratio:.2f}x the other hosts'" + (f"; {told}" if told else "")
        return Suspect(node, ratio, since, words)
    if signs is None:
        return None
    if job_slowdown is not None:  # the job logs step times: they must show it
        if job_slowdown < config.ratio_min:
            return None
        return Suspect(
            node, job_slowdown, signs.since, f"{told}; the job {job_slowdown:.2f}x its best pace"
        )
    return Suspect(node, signs.slowdown or config.assumed_slowdown, signs.since, told)


def _costs(job: TrainingJob, s: Suspect, config: SlowNodeConfig, now: datetime) -> Costs:
    basis = max(filter(None, (job.last_checkpoint_at, job.running_since)), default=now)
    return Costs(
        gpus=job.gpus or max(1, len(job.nodes)) * config.gpus_per_node,
        slowdown=max(1.0, s.slowdown),
        since_checkpoint_s=max(0.0, (now - basis).total_seconds()),
        cadence_s=cadence_s(job.checkpoint_times),
        restart_s=config.restart_s,
        write_s=config.checkpoint_write_s,
        leave_s=config.leave_s,
        ask=config.ask_checkpoint,
    )


def _due(job: TrainingJob, config: SlowNodeConfig) -> list[datetime]:
    """When a node the job already suspects has been slow for `evidence_s`."""
    if not job.running:
        return []
    return [s.since + timedelta(seconds=config.evidence_s) for s in suspects(job, config)]


@rule(
    NAME,
    on=(StepTimesObserved, JobNodeSlowed, CheckpointSaved, JobTick, JobNodesImplicated),
    config=SlowNodeConfig,
    due=_due,
)
def slow_node(job: TrainingJob, event: Event, config: SlowNodeConfig) -> Iterator[Trigger]:
    if isinstance(event, JobNodesImplicated):
        yield from _moved(job, event, config)
        return
    if not job.running:
        return
    now = event.occurred_at
    for s in suspects(job, config):
        plan = job.slow_plans.get(s.node)
        if plan is not None:
            if isinstance(event, CheckpointSaved) and now > plan.at:
                yield _take(
                    job,
                    event,
                    config,
                    s,
                    plan.timing,
                    f"at checkpoint step {event.payload.step}, as decided {plan.at.isoformat()}",
                )
            continue
        if (now - s.since).total_seconds() >= config.evidence_s:
            yield from _decide(job, event, config, s, now)


def _decide(
    job: TrainingJob, event: Event, config: SlowNodeConfig, s: Suspect, now: datetime
) -> Iterator[Trigger]:
    costs = _costs(job, s, config, now)
    timing = choose(costs, job.job_id, None if config.timing == "auto" else config.timing)
    why = f"{s.node} slows job {job.job_id} ({s.said}); {said(timing, costs)}"
    window = f"attempt-{job.attempt}/{s.node}/{timing.chosen}"
    common: dict[str, Any] = {
        "cause": event,
        "source": f"rule/{NAME}",
        "rule": NAME,
        "reason": why,
        "severity": config.severity,
        "timing": timing,
    }
    if timing.chosen == "now":
        yield _take(job, event, config, s, timing, "now")
    elif timing.chosen == "ask":
        yield RequestCheckpoint.decide(
            window=window, signal=config.signal, nodes=(s.node,), **common
        )
    else:
        leave = timing.chosen == "leave"
        yield Notify.decide(
            window=window,
            title=f"{s.node} slows job {job.job_id}: "
            + ("left in service" if leave else "out at the job's next checkpoint"),
            text=s.said,
            incident=f"{NAME}/{s.node}",
            nodes=(s.node,),
            job_id=job.job_id,
            **common,
        )


def _take(
    job: TrainingJob, event: Event, config: SlowNodeConfig, s: Suspect, timing: Timing, when: str
) -> Trigger:
    return quarantine(
        rule=NAME,
        cause=event,
        nodes=(s.node,),
        window=f"attempt-{job.attempt}/{s.node}",
        reason=f"{s.node} slows job {job.job_id} ({s.said}); taken out {when}, "
        f"then the job restarts from its checkpoint without it: {timing.saved_gpu_h:,.1f} GPU-h "
        "saved against taking it out at once",
        config=config,
        jobs=(job.job_id,),
        fault=FAULT,
        move_jobs=True,
        timing=timing,
    )


def _moved(
    job: TrainingJob, event: JobNodesImplicated, config: SlowNodeConfig
) -> Iterator[RestartJob]:
    """The drain that moves the job succeeded: restart it from its checkpoint without them."""
    if not event.payload.move or not job.running or len(job.restarts) >= config.max_restarts:
        return
    avoid = tuple(sorted({*implicated_in(job, job.attempt), *event.payload.nodes}))
    where = f"checkpoint step {job.last_checkpoint_step}" if job.last_checkpoint_uri else "scratch"
    yield RestartJob.decide(
        cause=event,
        source=f"rule/{NAME}",
        rule=NAME,
        window=f"attempt-{job.attempt}/moved",
        reason=f"moved off {', '.join(event.payload.nodes)} (slow): restart from {where}",
        severity=config.severity,
        checkpoint_uri=job.last_checkpoint_uri,
        checkpoint_step=job.last_checkpoint_step,
        attempt=job.attempt,
        exclude_nodes=avoid,
    )
