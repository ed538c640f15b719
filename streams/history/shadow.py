"""What rules in shadow mode would have done, beside what was done, from history.

Every decision of a range is read back (`triggers`, with the last result of each); those marked
`shadow` are what shadow rules would have done, the others what was decided live. They are set
side by side per target (each node a decision names, or its subject) and trigger type: a shadow
decision with no live one of its type on its target is something the shadow rules would have
done that nothing did; a live decision of a type the shadow rules decide, on a target they left
alone, is something done that they would not have done.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from streams.history.client import connect
from streams.history.settings import ClickHouseSettings

Side = Literal["shadow", "live"]
SUBJECTS_SHOWN = 5


@dataclass(frozen=True)
class Decided:
    """One decision of the range, and what its action worker last said about it."""

    trigger_id: str
    type: str
    rule: str
    cluster: str
    subject: str
    nodes: tuple[str, ...]
    occurred_at: datetime
    reason: str
    shadow: bool
    outcome: str | None  # started, succeeded (planned, for a shadow one), failed; None: no result
    error: str | None

    @property
    def targets(self) -> tuple[str, ...]:
        return self.nodes or (self.subject,)


@dataclass(frozen=True)
class Tally:
    """The decisions of one rule and trigger type on one side."""

    side: Side
    rule: str
    type: str
    decisions: int
    targets: int
    first_targets: tuple[str, ...]
    outcomes: dict[str, int]


@dataclass(frozen=True)
class Difference:
    """Shadow only: the shadow rules would have done it, nothing did. Live only: it was done,
    the shadow rules would not have."""

    side: Side
    type: str
    cluster: str
    target: str
    rule: str
    trigger_id: str
    occurred_at: datetime
    reason: str


@dataclass(frozen=True)
class ShadowReport:
    since: datetime
    until: datetime
    tallies: list[Tally]
    agreements: int
    differences: list[Difference]
    differences_total: int = 0
    shadow_rules: list[str] = field(default_factory=list)


_QUERY = """
SELECT toString(t.event_id), t.type, t.rule, t.cluster, t.subject, t.nodes, t.occurred_at,
       t.reason, JSONExtractBool(t.payload, 'shadow'), a.outcome, a.error
FROM (
    SELECT * FROM triggers FINAL
    WHERE occurred_at >= {since:DateTime64(6, 'UTC')} AND occurred_at < {until:DateTime64(6, 'UTC')}
) AS t
LEFT JOIN (
    SELECT trigger_id, argMax(outcome, occurred_at) AS outcome, argMax(error, occurred_at) AS error
    FROM action_results FINAL
    WHERE occurred_at >= {since:DateTime64(6, 'UTC')}
    GROUP BY trigger_id
) AS a ON a.trigger_id = t.event_id
ORDER BY t.occurred_at, t.event_id
"""


def decisions(settings: ClickHouseSettings, since: datetime, until: datetime) -> list[Decided]:
    """Every decision from `since` (included) to `until` (excluded), in event-time order."""
    with connect(settings) as client:
        rows = client.query(_QUERY, parameters={"since": since, "until": until}).result_rows
    return [
        Decided(
            trigger_id=tid,
            type=kind,
            rule=rule,
            cluster=cluster,
            subject=subject,
            nodes=tuple(nodes),
            occurred_at=at,
            reason=reason,
            shadow=bool(shadow),
            outcome=outcome or None,
            error=error or None,
        )
        for tid, kind, rule, cluster, subject, nodes, at, reason, shadow, outcome, error in rows
    ]


def report(
    decided: list[Decided], since: datetime, until: datetime, limit: int = 20
) -> ShadowReport:
    """Shadow decisions beside the live ones of the types they decide; the first `limit`
    differences in time order."""
    shadow = [d for d in decided if d.shadow]
    types = {d.type for d in shadow}
    live = [d for d in decided if not d.shadow and d.type in types]
    first: dict[tuple[Side, str, str, str], Decided] = {}
    for d in [*shadow, *live]:
        for target in d.targets:
            first.setdefault(("shadow" if d.shadow else "live", d.type, d.cluster, target), d)
    keys = {side: {k[1:] for k in first if k[0] == side} for side in ("shadow", "live")}
    differences = sorted(
        (
            Difference(side, kind, cluster, target, d.rule, d.trigger_id, d.occurred_at, d.reason)
            for (side, kind, cluster, target), d in first.items()
            if (kind, cluster, target) not in keys["live" if side == "shadow" else "shadow"]
        ),
        key=lambda x: (x.occurred_at, x.side, x.target),
    )
    return ShadowReport(
        since=since,
        until=until,
        tallies=[*_tallies("shadow", shadow), *_tallies("live", live)],
        agreements=len(keys["shadow"] & keys["live"]),
        differences=differences[:limit],
        differences_total=len(differences),
        shadow_rules=sorted({d.rule for d in shadow}),
    )


def _tallies(side: Side, decided: list[Decided]) -> list[Tally]:
    groups: dict[tuple[str, str], list[Decided]] = {}
    for d in decided:
        groups.setdefault((d.rule, d.type), []).append(d)
    tallies = []
    for (rule, kind), group in sorted(groups.items()):
        targets = list(dict.fromkeys(f"{d.cluster}/{t}" for d in group for t in d.targets))
        outcomes = Counter(_outcome(d) for d in group)
        tallies.append(
            Tally(
                side, rule, kind, len(group), len(targets), tuple(targets[:SUBJECTS_SHOWN]),
                dict(sorted(outcomes.items())),
            )
        )  # fmt: skip
    return tallies


def _outcome(d: Decided) -> str:
    if d.outcome is None:
        return "no result"
    if d.shadow:  # only ever planned: what the plan met is what it says
        return "planned" if d.outcome == "succeeded" else "would be refused"
    return d.outcome
