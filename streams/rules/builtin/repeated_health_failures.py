"""A node whose health checks were CRITICAL `threshold` times within `window_s` → quarantine
it and benchmark it (once per quarantine episode).

Counts come from the node's CRITICAL results in event time (`Node.health_failures`), across
its checks or only those named in `checks`. The agent re-sends an unchanged result every
`CENTRALITY_AGENT_CHECK_RESEND_S` (300 s), so the defaults (3 within an hour) mean a check
critical for about ten minutes, or one that keeps flapping back to critical. The rule is
evaluated on health results and fires only on a CRITICAL one, so a node whose checks have
recovered is not taken out for its past; `for_s` asks the condition to hold that much longer.
Failures before the node's last benchmark do not count: the benchmark judged it since.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

from pydantic import Field

from schemas.events import HealthStatus, NodeHealthChecked, Trigger
from streams.rules.builtin.quarantine import jobs_on, quarantine
from streams.rules.registry import RuleConfig, Severity, rule
from streams.state.node import Node

NAME = "repeated_health_failures"


class RepeatedHealthFailuresConfig(RuleConfig):
    threshold: int = Field(default=3, ge=1, description="CRITICAL results within the window.")
    window_s: float = Field(default=3600.0, gt=0, description="How far back results count.")
    checks: frozenset[str] = Field(
        default=frozenset(), description="Only these checks count; empty: every check."
    )
    severity: Severity = "critical"


@rule(NAME, on=(NodeHealthChecked,), config=RepeatedHealthFailuresConfig)
def repeated_health_failures(
    node: Node, event: NodeHealthChecked, config: RepeatedHealthFailuresConfig
) -> Iterator[Trigger]:
    p = event.payload
    if p.status != HealthStatus.CRITICAL or not node.may_quarantine_at(event.occurred_at):
        return
    if config.checks and p.check not in config.checks:
        return
    since = event.occurred_at - timedelta(seconds=config.window_s)
    if node.last_benchmark_at is not None:  # a benchmark since judged the node afresh
        since = max(since, node.last_benchmark_at)
    failures = [
        f
        for f in node.health_failures
        if since < f.at <= event.occurred_at and (not config.checks or f.check in config.checks)
    ]
    if len(failures) < config.threshold:
        return
    checks = sorted({f.check for f in failures})
    reason = (
        f"{len(failures)} critical health checks on {node.node_id} within "
        f"{config.window_s:.0f} s ({', '.join(checks)}); last: {p.check}"
        + (f": {p.message}" if p.message else "")
    )
    yield quarantine(
        rule=NAME,
        cause=event,
        nodes=(node.node_id,),
        window=node.episode(event.occurred_at),
        jobs=jobs_on(node, event),
        reason=reason,
        config=config,
        caused_by=tuple(f.event_id for f in failures),
        fault=f"health:{p.check}",
    )
