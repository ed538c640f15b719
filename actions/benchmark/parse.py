"""Runner output → one `BenchmarkCompletedPayload` per requested node."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from pydantic import ValidationError

from actions.benchmark.runner import KIND
from actions.remediation.reports import reports_of
from schemas.events.actions import BenchmarkCompletedPayload


def parse_reports(
    stdout: str, nodes: Sequence[str], trigger_id: uuid.UUID | None = None
) -> list[BenchmarkCompletedPayload]:
    """Every requested node gets a result: a node whose line is missing or unreadable is `error`."""
    found: dict[str, BenchmarkCompletedPayload] = {}
    problems: dict[str, str] = {}
    for node, doc in reports_of(stdout, KIND).items():
        doc.pop("kind")
        try:
            found[node] = BenchmarkCompletedPayload.model_validate(
                {**doc, "trigger_id": trigger_id}
            )
        except ValidationError as exc:
            problems[node] = f"unreadable report: {exc.errors()[0]['msg']}"
    return [
        found.get(node)
        or BenchmarkCompletedPayload(
            trigger_id=trigger_id,
            node=node,
            verdict="error",
            reasons=(problems.get(node, "the node printed no benchmark report"),),
        )
        for node in nodes
    ]
