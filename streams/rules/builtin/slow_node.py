"""A node slow but alive → taken out when it costs its job least; with no job, at once.

The node's GPUs give signs of what holds them back (throttle, thermal, power, low clocks,
corrected-error bursts, row remaps: `streams.state.slowness`; a benchmark that passed behind its
fleet's median only lowers how far behind a host must be, to `ratio_min_benchmarked`); each job
running here tells the node how fast it goes (`streams.state.job_pace`): this host's step times
against the job's other hosts', whether the other hosts wait for it at their collectives (NCCL
Inspector's times, `streams.state.waits`), the job's against its best pace this attempt, its
checkpoints. The node slows a job when its host is `ratio_min` behind the others, or when its GPUs
show signs or its peers wait for it while the job goes `ratio_min` slower than its best (or logs
no step times at all). Once slow for
`evidence_s`, it weighs (`streams.rules.timing`): out now, at the job's next checkpoint, after
asking the job for a checkpoint now (`ask_checkpoint`: the job honours the hook, docs/jobs.md), or
left. The choice and each figure are in the reason and the trigger's `timing`. Taken out is a
quarantine that moves the job: once drained, `restart_off_slow_node` restarts it from its
checkpoint without the node.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import Field

from schemas.envelope import Event
from schemas.events import Notify, RequestCheckpoint, Trigger
from schemas.events.triggers import CheckpointSignal, Timing
from streams.rules.builtin.quarantine import quarantine
from streams.rules.registry import RuleConfig, rule
from streams.rules.timing import Costs, choose, said
from streams.state.internal import NodeJobPaced, NodeJobPacedPayload, NodeTick
from streams.state.node import Node
from streams.state.pace import BEHIND
from streams.state.slowness import BENCHMARK_KEY, summary

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
    ratio_min_benchmarked: float = Field(
        default=BEHIND,
        ge=BEHIND,
        le=100.0,
        description="How much slower a host counts as slow on a node whose last benchmark "
        "passed behind its fleet's median (under FLEET_SLOW_SHARE of it): two weaker signs "
        "together. That benchmark alone slows nothing.",
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
    severity: Literal["info", "warning", "critical"] = "warning"


@dataclass(frozen=True)
class Slowed:
    """A job this node slows: how much, since when, in words."""

    job: NodeJobPacedPayload | None  # None: no job here
    slowdown: float
    since: datetime
    said: str


def slowed(node: Node, config: SlowNodeConfig) -> Slowed | None:
    """What this node slows: the job it holds back most (by GPUs), or itself with no job."""
    said, since, clocks = summary(node.slow)
    signs = "; ".join(said)
    if not node.jobs:
        return None if since is None else Slowed(None, clocks or 1.0, since, signs)
    least = config.ratio_min_benchmarked if BENCHMARK_KEY in node.slow else None
    found = [
        s
        for j in node.jobs
        if (s := _of_job(node.pace.get(j), config, signs, since, clocks, least))
    ]
    return max(found, key=lambda s: (s.job.gpus or 0) if s.job else 0, default=None)


def _of_job(
    pace: NodeJobPacedPayload | None,
    config: SlowNodeConfig,
    signs: str,
    since: datetime | None,
    clocks: float | None,
    least: float | None,
) -> Slowed | None:
    """`least`: how far behind a host counts, when not `ratio_min` (a benchmark behind)."""
    if pace is None:
        return None
    ratio, behind = pace.ratio, pace.behind_since
    if ratio is not None and behind is not None and ratio >= (least or config.ratio_min):
        words = f"steps {ratio:.2f}x the other hosts'" + (f"; {signs}" if signs else "")
        return Slowed(pace, ratio, behind, words)
    if pace.waited_since is not None:  # named by its peers' collectives: as good as a sign
        waited = _waited(pace)
        signs = f"{signs}; {waited}" if signs else waited
        since = min(filter(None, (since, pace.waited_since)))
    if since is None:
        return None
    if pace.slowdown is not None:  # the job logs step times: they must show it
        if pace.slowdown < config.ratio_min:
            return None
        return Slowed(
            pace, pace.slowdown, since, f"{signs}; the job {pace.slowdown:.2f}x its best pace"
        )
    return Slowed(pace, clocks or config.assumed_slowdown, since, signs)


def _waited(pace: NodeJobPacedPayload) -> str:
    return (
        f"the other hosts wait for it at {pace.waited_at or 'their collectives'}: "
        f"{pace.waited_ms or 0:,.1f} ms, their time {pace.waited_ratio or 0:.1f}x its own"
    )


def _due(node: Node, config: SlowNodeConfig) -> list[datetime]:
    """When what this node slows has been so for `evidence_s`."""
    found = slowed(node, config) if node.slow or node.pace else None
    return [] if found is None else [found.since + timedelta(seconds=config.evidence_s)]


# Not on GPU samples, the most frequent event of all: a sign's start is a state change, which
# `_due` turns into a tick once it has lasted `evidence_s`.
@rule(NAME, on=(NodeJobPaced, NodeTick), config=SlowNodeConfig, due=_due)
def slow_node(node: Node, event: Event, config: SlowNodeConfig) -> Iterator[Trigger]:
    if not node.slow and not node.pace:
        return
    now = event.occurred_at
    found = slowed(node, config)
    if found is None or not node.may_quarantine_at(now):
        return
    job = found.job
    plan = node.slow_plans.get(job.job_id) if job is not None else None
    if plan is not None and job is not None:
        if job.checkpoint_at is not None and job.checkpoint_at > plan.at:
            step = f"at checkpoint step {job.checkpoint_step}, as decided {plan.at.isoformat()}"
            yield _take(node, event, config, found, plan.timing, step)
        return
    if (now - found.since).total_seconds() < config.evidence_s:
        return
    if job is None:
        yield quarantine(
            rule=NAME,
            cause=event,
            nodes=(node.node_id,),
            window=f"idle/since-{found.since.isoformat()}",  # once a spell, in shadow too
            reason=f"slow with no job on it since {found.since.isoformat()}: {found.said}",
            config=config,
            fault=FAULT,
        )
        return
    yield from _decide(node, event, config, found, job, now)


def _costs(
    job: NodeJobPacedPayload, s: Slowed, config: SlowNodeConfig, node: Node, now: datetime
) -> Costs:
    started = node.jobs[job.job_id].since
    basis = max(filter(None, (job.checkpoint_at, started)))
    return Costs(
        gpus=job.gpus or max(1, job.nodes) * (node.gpu_count or config.gpus_per_node),
        slowdown=max(1.0, s.slowdown),
        since_checkpoint_s=max(0.0, (now - basis).total_seconds()),
        cadence_s=job.cadence_s,
        restart_s=config.restart_s,
        write_s=config.checkpoint_write_s,
        leave_s=config.leave_s,
        ask=config.ask_checkpoint,
    )


def _decide(
    node: Node,
    event: Event,
    config: SlowNodeConfig,
    s: Slowed,
    job: NodeJobPacedPayload,
    now: datetime,
) -> Iterator[Trigger]:
    costs = _costs(job, s, config, node, now)
    timing = choose(costs, job.job_id, None if config.timing == "auto" else config.timing)
    why = f"{node.node_id} slows job {job.job_id} ({s.said}); {said(timing, costs)}"
    window = f"{job.job_id}/attempt-{job.attempt}/{timing.chosen}"
    common: dict[str, Any] = {
        "cause": event,
        "source": f"rule/{NAME}",
        "rule": NAME,
        "reason": why,
        "severity": config.severity,
        "timing": timing,
    }
    if timing.chosen == "now":
        yield _take(node, event, config, s, timing, "now")
    elif timing.chosen == "ask":
        yield RequestCheckpoint.decide(
            subject=job.job_id, window=window, signal=config.signal, nodes=(node.node_id,), **common
        )
    else:
        leave = timing.chosen == "leave"
        yield Notify.decide(
            window=window,
            title=f"{node.node_id} slows job {job.job_id}: "
            + ("left in service" if leave else "out at the job's next checkpoint"),
            text=s.said,
            incident=f"{NAME}/{node.node_id}",
            nodes=(node.node_id,),
            job_id=job.job_id,
            **common,
        )


def _take(
    node: Node, event: Event, config: SlowNodeConfig, s: Slowed, timing: Timing, when: str
) -> Trigger:
    attempt = s.job.attempt if s.job is not None else 0
    return quarantine(
        rule=NAME,
        cause=event,
        nodes=(node.node_id,),
        window=f"{timing.job_id}/attempt-{attempt}/{timing.chosen}/out",
        reason=f"{node.node_id} slows job {timing.job_id} ({s.said}); taken out {when}, then "
        f"the job restarts from its checkpoint without it: {timing.saved_gpu_h:,.1f} GPU-h "
        "saved against taking it out at once",
        config=config,
        jobs=(timing.job_id,),
        fault=FAULT,
        move_jobs=True,
        timing=timing,
    )
