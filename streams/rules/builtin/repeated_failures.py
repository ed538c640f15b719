"""A job failing `threshold` times on the same node set within a window → ask for the quarantine
of those nodes and tell people (each node is benchmarked once its drain succeeded).

Counts come from the node set's failure list in event time (see `streams.state.windows`); with
hopping windows the decision is named after the earliest window that reached the threshold, and
`cooldown_s` (default: one window) keeps overlapping windows from deciding again.

A set over `suspects_over_nodes` nodes is not drained: people are told, and each of its nodes
asks for its own quarantine only if its own evidence names it (`suspects`).
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from schemas.events import Notify, Trigger
from schemas.events.incidents import node_thread
from schemas.limits import listed
from streams.rules.builtin.quarantine import quarantine
from streams.rules.builtin.suspects import EVIDENCE, suspect
from streams.rules.registry import RuleConfig, Severity, rule
from streams.state.internal import NodeJobObserved, NodeSetFailed
from streams.state.node import Node
from streams.state.node_set import NodeSet
from streams.state.windows import Failure, WindowConfig, in_window, window_starts

NAME = "repeated_failures_on_node_set"


class RepeatedFailuresConfig(RuleConfig):
    threshold: int = Field(default=5, ge=1, description="Failures within one window.")
    window: WindowConfig = WindowConfig()
    cooldown_s: float = Field(default=3600.0, ge=0)
    severity: Severity = "critical"
    suspects_over_nodes: int = Field(
        default=16,
        ge=1,
        description="A node set larger than this is never drained whole: only its suspects "
        f"are, the nodes its failures' own evidence names ({EVIDENCE}).",
    )
    suspect_batch_nodes: int = Field(
        default=4,
        ge=1,
        description="A big job's suspects are drained and benchmarked this many at a time; "
        "the others wait their turn in service.",
    )


@rule(NAME, on=(NodeSetFailed, NodeJobObserved), config=RepeatedFailuresConfig)
def repeated_failures(
    state: NodeSet | Node, event: NodeSetFailed | NodeJobObserved, config: RepeatedFailuresConfig
) -> Iterator[Trigger]:
    if isinstance(state, Node) and isinstance(event, NodeJobObserved):
        p = event.payload
        if p.failure and p.job_nodes > config.suspects_over_nodes:
            yield from suspect(
                name=NAME,
                node=state,
                event=event,
                config=config,
                threshold=config.threshold,
                window=config.window,
                batch_nodes=config.suspect_batch_nodes,
            )
        return
    assert isinstance(state, NodeSet) and isinstance(event, NodeSetFailed)
    for start in window_starts(event.occurred_at, config.window):
        failed = in_window(state.failures, start, config.window)
        if len(failed) < config.threshold:
            continue
        yield from _decided(event, config, failed, f"{int(start.timestamp())}")
        return


def _decided(
    event: NodeSetFailed,
    config: RepeatedFailuresConfig,
    failed: list[Failure],
    start: str,
) -> Iterator[Trigger]:
    nodes = event.payload.nodes
    window = f"{start}+{int(config.window.window_s)}"
    jobs = sorted({f.job_id for f in failed})
    caused_by = tuple(f.cause for f in failed)
    big = len(nodes) > config.suspects_over_nodes
    reason = (
        f"{len(failed)} failed attempts on {len(nodes)} node(s) ({listed(nodes)}) within "
        f"{config.window.window_s:.0f} s (jobs: {listed(jobs, 512)})"
    )
    if big:
        title = f"Repeated failures on {len(nodes)} nodes: only suspects are drained"
        text = (
            f"{reason}. More than {config.suspects_over_nodes} nodes: the set is not drained. "
            f"Each node whose own evidence ({EVIDENCE}) names it asks for its quarantine and is "
            f"benchmarked, {config.suspect_batch_nodes} at a time (released if it passes); the "
            "rest stay in service. No such evidence "
            "anywhere: nothing is drained, and the job's own failure is to be looked at."
        )
    else:
        title = f"Quarantine of {len(nodes)} node(s) requested after repeated failures"
        text = f"{reason}. Asked to drain them; each is benchmarked once its drain succeeded."
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
        title=title,
        text=text,
        # A drain decided is told by the nodes' incident; the big set's notice (nothing drained
        # but suspects) is told on its own.
        incident=f"{NAME}/{event.subject}/{window}"
        if big
        else node_thread(event.cluster, event.subject),
        nodes=nodes,
        job_id=event.payload.job_id,
    )
