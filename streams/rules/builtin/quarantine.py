"""The decision shared by rules that take nodes out of service: ask for their quarantine.

Only the drain is decided here. What follows (benchmark, verdict, release or keep) is decided by
`quarantine_story` and `benchmark_verdict` on each node once the action workers report that the
previous step actually happened, so nothing runs on a node that is still in service.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import timedelta

from schemas.envelope import Event
from schemas.events import QuarantineBatch, QuarantineNodes
from schemas.events.triggers import Timing
from schemas.limits import SMALL_LIST
from streams.rules.registry import RuleConfig
from streams.state.node import Node

# A job that failed on a node this recently is told when the node is taken out, like the jobs
# running there: its restart avoids the node.
FAILED_HERE_S = 3600.0


def quarantine(
    *,
    rule: str,
    cause: Event,
    nodes: tuple[str, ...],
    window: str,
    reason: str,
    config: RuleConfig,
    caused_by: tuple[uuid.UUID, ...] | None = None,
    jobs: Iterable[str] = (),
    batch: QuarantineBatch | None = None,
    fault: str | None = None,
    move_jobs: bool = False,
    timing: Timing | None = None,
) -> QuarantineNodes:
    return QuarantineNodes.decide(
        cause=cause,
        source=f"rule/{rule}",
        rule=rule,
        window=f"{window}/quarantine",
        reason=reason,
        severity=config.severity,
        nodes=nodes,
        caused_by=caused_by or (cause.event_id,),
        jobs=tuple(dict.fromkeys(jobs))[:SMALL_LIST],
        batch=batch,
        fault=fault,
        move_jobs=move_jobs,
        timing=timing,
    )


def jobs_on(node: Node, cause: Event) -> list[str]:
    """The jobs a quarantine of `node` implicates: running there, or failed there lately."""
    since = cause.occurred_at - timedelta(seconds=FAILED_HERE_S)
    failed = [f.job_id for f in reversed(node.failures) if f.at >= since]
    return [*reversed(node.jobs), *failed]
