"""A job holding GPUs that stay at ~0% utilisation for longer than `idle_s` → Notify; on clusters
that opted in (`cancel_clusters`), also CancelJob. Once per job attempt.

Evaluated on the node (its GPU samples and clock ticks): the node knows which jobs run there and
since when every GPU it sampled has been idle. Idle time counts from the later of "every GPU
idle" and "the job started here", so a job landing on a node that idled before is not blamed for
that. Several idle nodes of one job decide the same trigger ids, which actions do once.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from pydantic import Field

from schemas.events import CancelJob, GpuSampled, Notify, Trigger
from streams.rules.registry import RuleConfig, rule
from streams.state.internal import NodeTick
from streams.state.node import IDLE_UTILIZATION_PCT, Node

NAME = "idle_allocation"


class IdleAllocationConfig(RuleConfig):
    idle_s: float = Field(default=3600.0, gt=0, description="Idle this long is flagged.")
    cancel_clusters: frozenset[str] = Field(
        default=frozenset(), description="Clusters whose idle jobs are also cancelled."
    )


def idle_over(node: Node, config: IdleAllocationConfig) -> list[datetime]:
    if not node.jobs:  # nothing held to flag (and a look at every GPU saved)
        return []
    idle_since = node.idle_since
    if idle_since is None:
        return []
    limit = timedelta(seconds=config.idle_s)
    return [max(idle_since, here.since) + limit for here in node.jobs.values()]


@rule(NAME, on=(GpuSampled, NodeTick), config=IdleAllocationConfig, due=idle_over)
def idle_allocation(
    node: Node, event: GpuSampled | NodeTick, config: IdleAllocationConfig
) -> Iterator[Trigger]:
    if not node.jobs:
        return
    idle_since = node.idle_since
    if idle_since is None:
        return
    for job, here in sorted(node.jobs.items()):
        attempt, since = here.attempt, max(idle_since, here.since)
        if (event.occurred_at - since).total_seconds() < config.idle_s:
            continue
        # Event times and settings only: a sample or a tick at any later instant decides it.
        reason = (
            f"every GPU of {node.node_id} at ≤{IDLE_UTILIZATION_PCT:g}% utilisation since "
            f"{since.isoformat()} (limit {config.idle_s / 60:.0f} min) while {job} "
            f"(attempt {attempt}) holds it"
        )
        common: dict[str, Any] = {
            "cause": event,
            "source": f"rule/{NAME}",
            "subject": job,
            "rule": NAME,
            "reason": reason,
            "severity": config.severity,
            "caused_by": (),
        }
        cancel = node.cluster in config.cancel_clusters
        yield Notify.decide(
            window=f"attempt-{attempt}/idle/notify",
            title=f"Idle GPU allocation: {job}",
            text=reason + ("; cancelling it." if cancel else "."),
            incident=f"{NAME}/{job}/attempt-{attempt}",
            nodes=(node.node_id,),
            job_id=job,
            **common,
        )
        if cancel:
            yield CancelJob.decide(window=f"attempt-{attempt}/idle/cancel", **common)
