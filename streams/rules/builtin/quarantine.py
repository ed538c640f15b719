"""The decision pair shared by rules that take nodes out of service: quarantine, then benchmark."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from schemas.envelope import Event
from schemas.events import QuarantineNodes, RunBenchmark, Trigger
from streams.rules.registry import RuleConfig


def quarantine_and_benchmark(
    *,
    rule: str,
    cause: Event,
    nodes: tuple[str, ...],
    window: str,
    reason: str,
    config: RuleConfig,
    caused_by: tuple[uuid.UUID, ...] | None = None,
) -> Iterator[Trigger]:
    common: dict[str, Any] = {
        "cause": cause,
        "source": f"rule/{rule}",
        "rule": rule,
        "reason": reason,
        "severity": config.severity,
        "nodes": nodes,
        "caused_by": caused_by or (cause.event_id,),
    }
    yield QuarantineNodes.decide(window=f"{window}/quarantine", **common)
    yield RunBenchmark.decide(window=f"{window}/benchmark", **common)
