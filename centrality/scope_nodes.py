"""How many known nodes each node-group scope selects: a scope that selects none is likely a
typo (`NVIDIA A100` for `NVIDIA A100*`) or a group not in this fleet. Known nodes are the
streams app's (its `status` topic, as `centrality nodes` reads it)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from centrality import service_errors  # noqa: F401  (Kafka away: its one line)
from centrality.errors import explain, one_line
from schemas.groups import NODES, Facts
from schemas.runtime.fleet import read_fleet
from schemas.runtime.settings import KafkaSettings
from streams.rules.registry import BoundRule


@dataclass(frozen=True)
class KnownNodes:
    """The nodes read, or why none could be (`facts` None)."""

    facts: tuple[Facts, ...] | None
    unread: str = ""

    def counts(self, bound: BoundRule) -> list[int | None]:
        """Per scope of the rule, the known nodes it selects; None where not counted: the fleet
        unread, or a scope of a rule about jobs (job classes select no node)."""
        if self.facts is None or NODES not in bound.kinds:
            return [None] * len(bound.scopes)
        return [
            sum(1 for n in self.facts if s.match.selects(n)) if NODES in s.match.kinds else None
            for s in bound.scopes
        ]

    def empty_scopes(self, rules: Sequence[BoundRule]) -> list[str]:
        """`rule 'x' scopes.0 (gpu_model=…)` for each scope that selects no known node; none
        while no node is known at all (a fleet starting, or not yet telling its facts)."""
        if not self.facts:
            return []
        return [
            f"rule {bound.spec.name!r} scopes.{i} ({scope.match.said()})"
            for bound in rules
            for i, (scope, count) in enumerate(zip(bound.scopes, self.counts(bound), strict=True))
            if count == 0
        ]


def read_known_nodes(kafka: KafkaSettings | None = None) -> KnownNodes:
    """The nodes of the status topic; a fleet that cannot be read is one line of why."""
    try:
        fleet = asyncio.run(read_fleet(kafka or KafkaSettings()))
    except Exception as exc:
        failure = explain(exc)
        why = failure.problem if failure else f"{type(exc).__name__}: {one_line(str(exc), 200)}"
        return KnownNodes(None, why)
    return KnownNodes(tuple(s.group_facts for s in fleet.nodes.values()))
