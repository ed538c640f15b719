"""What the simulator did to its nodes and jobs, as it happened: whoever reads the pipeline's
decisions can set each one beside the fault behind it (or find none behind it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

Kind = Literal["node", "job"]


@dataclass(frozen=True)
class Faulted:
    """One fault shown: `how` in words, at `at`, as the events showing it are stamped."""

    subject: str
    kind: Kind
    how: str
    at: datetime


@dataclass(frozen=True)
class FaultSummary:
    """The faults of one kind on one subject: how many, the first and the last."""

    subject: str
    kind: Kind
    how: str
    count: int
    first_at: datetime
    last_at: datetime

    def as_json(self) -> dict[str, object]:
        return {
            "subject": self.subject,
            "kind": self.kind,
            "how": self.how,
            "count": self.count,
            "first_at": self.first_at.isoformat(),
            "last_at": self.last_at.isoformat(),
        }


def summary(faulted: Iterable[Faulted]) -> list[FaultSummary]:
    """One line per (subject, how), in the order each first happened."""
    seen: dict[tuple[str, str], list[Faulted]] = {}
    for f in faulted:
        seen.setdefault((f.subject, f.how), []).append(f)
    return [
        FaultSummary(
            fs[0].subject,
            fs[0].kind,
            fs[0].how,
            len(fs),
            fs[0].at,
            fs[-1].at,
        )
        for fs in seen.values()
    ]
