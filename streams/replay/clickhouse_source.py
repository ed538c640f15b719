"""History read from ClickHouse: a time range, optionally narrowed to one job or one node."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from schemas.envelope import Event
from schemas.events import Trigger
from streams.history import query
from streams.history.query import event_time_key, events_between, jobs_on_node, triggers_naming
from streams.history.settings import ClickHouseSettings
from streams.replay.source import History, split


@dataclass(frozen=True)
class Scope:
    since: datetime
    until: datetime
    job: str | None = None
    node: str | None = None


@dataclass(frozen=True)
class ClickHouseSource:
    settings: ClickHouseSettings
    scope: Scope

    def load(self, warmup_s: float) -> History:
        scope, settings = self.scope, self.settings
        subjects: list[str] | None = None
        if scope.job is not None:
            subjects = [scope.job]
        elif scope.node is not None:
            # A node's story includes the jobs that ran on it: their exits are what node rules
            # count.
            subjects = [scope.node, *jobs_on_node(settings, scope.node, scope.until)]
        start = scope.since - timedelta(seconds=warmup_s)
        events = events_between(settings, start, scope.until, subjects)
        recorded: dict[str, Event] = {
            str(e.event_id): e
            for e in events
            if isinstance(e, Trigger) and e.occurred_at >= scope.since
        }
        if scope.node is not None:
            missing = [
                t
                for t in triggers_naming(settings, scope.node, scope.since, scope.until)
                if t not in recorded
            ]
            recorded.update(query.events_by_id(settings, missing))
        warmup, inputs = split(events, scope.since)
        triggers = [t for t in recorded.values() if isinstance(t, Trigger)]
        return History(
            scope.since, scope.until, warmup, inputs, sorted(triggers, key=event_time_key)
        )

    def events_by_id(self, ids: Sequence[str]) -> dict[str, Event]:
        return query.events_by_id(self.settings, ids)

    def action_results_for(self, trigger_ids: Sequence[str]) -> list[Event]:
        return query.action_results_for(self.settings, trigger_ids)
