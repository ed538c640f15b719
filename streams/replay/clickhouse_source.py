"""History read from ClickHouse: a time range, optionally narrowed to one job or one node."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from schemas.envelope import Event
from schemas.events import Trigger
from streams.history import query
from streams.history.query import (
    event_time_key,
    jobs_on_node,
    stream_events_between,
    triggers_naming,
)
from streams.history.settings import ClickHouseSettings
from streams.replay.source import History, split


@dataclass(frozen=True)
class Scope:
    since: datetime
    until: datetime
    job: str | None = None
    node: str | None = None


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

    def stream(self, warmup_s: float) -> Streamed:
        """The range and its warm-up, read a page at a time (a job's or node's story, small, in
        one query), so a day of a whole fleet never sits in memory."""
        scope, settings = self.scope, self.settings
        subjects: list[str] | None = None
        if scope.job is not None:
            subjects = [scope.job]
        elif scope.node is not None:
            # A node's story includes the jobs that ran on it: their exits are what node rules
            # count.
            subjects = [scope.node, *jobs_on_node(settings, scope.node, scope.until)]
        start = scope.since - timedelta(seconds=warmup_s)
        page_s = query.PAGE_S if subjects is None else None
        events = stream_events_between(settings, start, scope.until, subjects, page_s)
        recorded: list[Trigger] = []
        return Streamed(scope.since, scope.until, _facts(events, scope.since, recorded), recorded)

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


def _facts(events: Iterable[Event], since: datetime, recorded: list[Trigger]) -> Iterator[Event]:
    for event in events:
        if not isinstance(event, Trigger):
            yield event
        elif event.occurred_at >= since:
            recorded.append(event)
