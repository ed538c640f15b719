"""History read from ClickHouse: a time range, optionally narrowed to one job or one node."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from schemas.envelope import Event
from schemas.events import Trigger
from schemas.registry import event_types
from streams.analysis.replay.source import History, split, without_outcomes
from streams.brain.parts import Part, split_types
from streams.history import query
from streams.history.query import (
    event_time_key,
    jobs_on_node,
    stream_events_between,
    triggers_naming,
)
from streams.history.settings import ClickHouseSettings


@dataclass(frozen=True)
class Scope:
    since: datetime
    until: datetime
    job: str | None = None
    node: str | None = None
    cluster: str | None = None  # only this cluster's events (a what-if of one cluster)


@dataclass(frozen=True)
class Streamed:
    """A range read while it is re-decided: `facts` yields the warm-up, then the range, in
    event-time order, triggers left out; `recorded` gathers the range's triggers of then as they
    pass (complete once `facts` is exhausted)."""

    since: datetime
    until: datetime
    facts: Iterator[Event]
    recorded: list[Trigger]


@dataclass(frozen=True)
class ClickHouseSource:
    settings: ClickHouseSettings
    scope: Scope
    # Decisions (trigger ids) whose outcomes are left out: a what-if's candidate does not make
    # them, so in its world nothing was done about them (`streams.analysis.whatif.world`).
    withheld: frozenset[str] = frozenset()

    def stream(self, warmup_s: float, part: Part | None = None) -> Streamed:
        """The range and its warm-up, read a page at a time (a job's or node's story, small, in
        one query), so a day of a whole fleet never sits in memory. With `part`, only what that
        part of the brain folds (`streams.brain.parts`), and the recorded decisions in the first
        part only."""
        scope, settings = self.scope, self.settings
        if part is not None and (scope.job is not None or scope.node is not None):
            raise ValueError("a job's or a node's story is read whole, not in parts")
        subjects: list[str] | None = None
        if scope.job is not None:
            subjects = [scope.job]
        elif scope.node is not None:
            # A node's story includes the jobs that ran on it: their exits are what node rules
            # count.
            subjects = [scope.node, *jobs_on_node(settings, scope.node, scope.until)]
        start = scope.since - timedelta(seconds=warmup_s)
        page_events = query.PAGE_EVENTS if subjects is None else None
        narrowed = _of_cluster(None if part is None else _narrowing(part), scope.cluster)
        events = stream_events_between(
            settings, start, scope.until, subjects, page_events, narrowed
        )
        recorded: list[Trigger] = []
        facts = _facts(events, scope.since, recorded)
        if self.withheld:
            facts = without_outcomes(facts, self.withheld)
        return Streamed(scope.since, scope.until, facts, recorded)

    def load(self, warmup_s: float) -> History:
        scope, settings = self.scope, self.settings
        streamed = self.stream(warmup_s)
        facts = list(streamed.facts)
        recorded: dict[str, Event] = {str(t.event_id): t for t in streamed.recorded}
        if scope.node is not None:
            missing = [
                t
                for t in triggers_naming(settings, scope.node, scope.since, scope.until)
                if t not in recorded
            ]
            recorded.update(query.events_by_id(settings, missing))
        warmup, inputs = split(facts, scope.since)
        triggers = [t for t in recorded.values() if isinstance(t, Trigger)]
        return History(
            scope.since, scope.until, warmup, inputs, sorted(triggers, key=event_time_key)
        )

    def events_by_id(self, ids: Sequence[str]) -> dict[str, Event]:
        return query.events_by_id(self.settings, ids)

    def action_results_for(self, trigger_ids: Sequence[str]) -> list[Event]:
        return query.action_results_for(self.settings, trigger_ids)

    def status_before(
        self, subjects: Sequence[str], before: datetime
    ) -> dict[str, tuple[datetime, dict[str, Any]]]:
        return query.status_before(self.settings, subjects, before)


def _narrowing(part: Part) -> tuple[str, dict[str, Any]]:
    """The SQL choosing a part's events: its own of the split types, every other, and the
    decisions only in the first part."""
    sql = (
        "crc32(subject) % {part_count:UInt32} = {part_index:UInt32} "
        "OR NOT has({split_types:Array(String)}, type)"
    )
    if part.index > 0:
        sql = f"({sql}) AND NOT has({{part_decisions:Array(String)}}, type)"
    decisions = [name for name, cls in event_types().items() if issubclass(cls, Trigger)]
    return sql, {
        "part_count": part.count,
        "part_index": part.index,
        "split_types": split_types(),
        "part_decisions": decisions,
    }


def _of_cluster(
    narrowed: tuple[str, dict[str, Any]] | None, cluster: str | None
) -> tuple[str, dict[str, Any]] | None:
    """`narrowed`, and only `cluster`'s events where one is named."""
    if cluster is None:
        return narrowed
    sql, params = narrowed or ("1", {})
    return f"({sql}) AND cluster = {{cluster:String}}", {**params, "cluster": cluster}


def _facts(events: Iterable[Event], since: datetime, recorded: list[Trigger]) -> Iterator[Event]:
    for event in events:
        if not isinstance(event, Trigger):
            yield event
        elif event.occurred_at >= since:
            recorded.append(event)
