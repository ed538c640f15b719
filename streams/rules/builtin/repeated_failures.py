"""A job failing `threshold` times on the same node set within a window → ask for the quarantine
of those nodes and tell people (each node is benchmarked once its drain succeeded).

Counts come from the node set's failure list in event time (see `streams.state.windows`); with
hopping windows the decision is named after the earliest window that reached the threshold, and
`cooldown_s` (default: one window) keeps overlapping windows from deciding again.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from schemas.events import Notify, Trigger
from streams.rules.builtin.quarantine import quarantine
from streams.rules.registry import RuleConfig, Severity, rule
from streams.state.internal import NodeSetFailed
from streams.state.node_set import NodeSet
from streams.state.windows import WindowConfig, in_window, window_starts

NAME = "repeated_failures_on_node_set"


class RepeatedFailuresConfig(RuleConfig):
    threshold: int = Field(default=5, ge=1, description="Failures within one window.")
    window: WindowConfig = WindowConfig()
    cooldown_s: float = Field(default=3600.0, ge=0)
    severity: Severity = "critical"


@rule(NAME, on=(NodeSetFailed,), config=RepeatedFailuresConfig)
def repeated_failures(
    node_set: NodeSet, event: NodeSetFailed, config: RepeatedFailuresConfig
) -> Iterator[Trigger]:
    for start in window_starts(event.occurred_at, config.window):
        failed = in_window(node_set.failures, start, config.window)
        if len(failed) < config.threshold:
            continue
        nodes = event.payload.nodes
        window = f"{int(start.timestamp())}+{int(config.window.window_s)}"
        jobs = sorted({f.job_id for f in failed})
        reason = (
            f"{len(failed)} failed attempts on {', '.join(nodes)} within "
            f"{config.window.window_s:.0f} s (jobs: {', '.join(jobs)})"
        )
        caused_by = tuple(f.cause for f in failed)
        yield quarantine(
            rule=NAME,
            cause=event,
            nodes=nodes,
            window=window,
            reason=reason,
            config=config,
            caused_by=caused_by,
            jobs=jobs,
        )
        yield Notify.decide(
            cause=event,
            source=f"rule/{NAME}",
            rule=NAME,
            window=f"{window}/notify",
            reason=reason,
            severity=config.severity,
            caused_by=caused_by,
            title=f"Quarantine of {len(nodes)} node(s) requested after repeated failures",
            text=reason + ". Asked to drain them; each is benchmarked once its drain succeeded.",
            incident=f"{NAME}/{event.subject}/{window}",
            nodes=nodes,
            job_id=event.payload.job_id,
        )
        return
