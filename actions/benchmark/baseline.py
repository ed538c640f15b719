"""The fleet baseline a benchmarked node's pass is judged against too (issue 28): what other nodes
of its GPU model reached lately, read from history when the benchmark ends.

The action worker imports no history code (actions meet streams only through schemas and Kafka):
whoever starts it hands it a `BaselineSource`; `centrality actions` hands it one over ClickHouse
(`streams.history.baseline`). A source that fails, or none, leaves a baseline saying why, and the
streams judge the node without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import structlog

from schemas.events.actions import BenchmarkCompletedPayload, FleetBaseline

log = structlog.get_logger("actions.benchmark")


class BaselineSource(Protocol):
    def __call__(
        self, cluster: str, model: str, nodes: Sequence[str], window_s: float
    ) -> FleetBaseline: ...


def no_history(cluster: str, model: str, nodes: Sequence[str], window_s: float) -> FleetBaseline:
    return FleetBaseline(model=model, window_s=window_s, unavailable="the worker reads no history")


def with_baselines(
    reports: Sequence[BenchmarkCompletedPayload],
    source: BaselineSource,
    cluster: str,
    window_s: float,
) -> list[BenchmarkCompletedPayload]:
    """Each pass with its model's baseline: one look-up per model, none of the benchmarked nodes
    its own peer."""
    nodes = [r.node for r in reports]
    found: dict[str, FleetBaseline] = {}

    def baseline(model: str | None) -> FleetBaseline:
        if model is None:
            return FleetBaseline(window_s=window_s, unavailable="the runner named no GPU model")
        if model not in found:
            try:
                found[model] = source(cluster, model, nodes, window_s)
            except Exception as exc:  # the verdict goes on without it, and says so
                log.warning("fleet_baseline_unread", model=model, error=repr(exc)[:300])
                found[model] = FleetBaseline(
                    model=model,
                    window_s=window_s,
                    unavailable=f"history unreachable ({type(exc).__name__})",
                )
        return found[model]

    return [
        r.model_copy(update={"fleet": baseline(next((g.model for g in r.gpus if g.model), None))})
        if r.verdict == "pass"
        else r
        for r in reports
    ]
