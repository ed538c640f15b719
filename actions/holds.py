"""What each silence held, read from the action ledger: a pure fold, so `centrality silence list`
and the message told when a silence ends say the same.

A decision a silence held is a ledger entry with outcome `held` naming the silence (`held_by`);
a shadow rule's decision it would have held is no hold (nothing would have been done anyway).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from actions.ledger import LedgerEntry
from actions.slack.words import fold

WHOLE = 1 << 62  # a node list folded whole, never cut


@dataclass
class Held:
    """The decisions one silence held: by action and by rule, on which nodes and jobs."""

    silence_id: str
    decisions: int = 0
    actions: Counter[str] = field(default_factory=Counter)
    rules: Counter[str] = field(default_factory=Counter)
    nodes: set[str] = field(default_factory=set)
    jobs: set[str] = field(default_factory=set)
    first_at: datetime | None = None
    last_at: datetime | None = None

    def add(self, entry: LedgerEntry) -> None:
        self.decisions += 1
        self.actions[entry.action] += 1
        self.rules[entry.rule or "unknown"] += 1
        if entry.nodes:
            self.nodes.update(entry.nodes)
        elif "/" in entry.subject:  # a job: its id is scheduler-qualified
            self.jobs.add(entry.subject)
        else:
            self.nodes.add(entry.subject)
        at = entry.recorded_at
        self.first_at = at if self.first_at is None else min(self.first_at, at)
        self.last_at = at if self.last_at is None else max(self.last_at, at)

    def document(self) -> dict[str, Any]:
        """For `--json`: counts by action and rule, the nodes as one hostlist (whole)."""
        return {
            "decisions": self.decisions,
            "actions": dict(sorted(self.actions.items())),
            "rules": dict(sorted(self.rules.items())),
            "nodes": fold(self.nodes, WHOLE) if self.nodes else None,
            "nodes_count": len(self.nodes),
            "jobs": sorted(self.jobs),
            "first_at": None if self.first_at is None else self.first_at.isoformat(),
            "last_at": None if self.last_at is None else self.last_at.isoformat(),
        }


def held_by_silence(entries: Iterable[LedgerEntry]) -> dict[str, Held]:
    """What each silence held, by its id (a silence that held nothing is not in it)."""
    found: dict[str, Held] = {}
    for entry in entries:
        if entry.held_by is None or entry.outcome != "held":
            continue
        found.setdefault(entry.held_by, Held(entry.held_by)).add(entry)
    return found
