"""A node's side of its jobs' pace: what each job running on it told of how fast it goes
(`streams.state.job_pace`), and the node's own plans to leave a job at its next checkpoint,
folded back from `slow_node`'s decisions (a checkpoint asked for, or one waited for)."""

from __future__ import annotations

from schemas.events import Notify, RequestCheckpoint
from streams.state.internal import NodeJobPaced
from streams.state.node import Node, fold
from streams.state.pace import SlowPlan

PLANNED = ("ask", "at_checkpoint")


@fold.register
def _(event: NodeJobPaced, state: Node) -> Node:
    p = event.payload
    here = state.jobs.get(p.job_id)
    if here is None or here.attempt > p.attempt:
        return state  # a job that left, or told of an attempt before the one running here
    return state.model_copy(update={"pace": {**state.pace, p.job_id: p}})


def planned(event: Notify | RequestCheckpoint, state: Node) -> Node:
    """A job to leave at its next checkpoint, as this node's own decision said."""
    timing = event.payload.timing
    if timing is None or timing.chosen not in PLANNED or timing.job_id in state.slow_plans:
        return state
    plan = SlowPlan(timing=timing, at=event.occurred_at, trigger_id=event.event_id)
    return state.model_copy(update={"slow_plans": {**state.slow_plans, timing.job_id: plan}})


fold.register(RequestCheckpoint, planned)
