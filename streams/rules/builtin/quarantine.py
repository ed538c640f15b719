"""The decision shared by rules that take nodes out of service: ask for their quarantine.

Only the drain is decided here. What follows (benchmark, verdict, release or keep) is decided by
`quarantine_story` and `benchmark_verdict` on each node once the action workers report that the
previous step actually happened, so nothing runs on a node that is still in service.
"""

from __future__ import annotations

import uuid

from schemas.envelope import Event
from schemas.events import QuarantineNodes
from streams.rules.registry import RuleConfig


def quarantine(
    *,
    rule: str,
    cause: Event,
    nodes: tuple[str, ...],
    window: str,
    reason: str,
    config: RuleConfig,
    caused_by: tuple[uuid.UUID, ...] | None = None,
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
    )
