"""What a replay reads: a time range of history, optionally narrowed to one job or one node."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from schemas.envelope import Event
from schemas.events import Trigger
from streams.history.query import (
    event_time_key,
    events_between,
    events_by_id,
    jobs_on_node,
    triggers_naming,
)
from streams.history.settings import ClickHouseSettings


@dataclass(frozen=True)
class Scope:
    since: datetime
    until: datetime
    job: str | None = None
    node: str | None = None


@dataclass(frozen=True)
class History:
    """The inputs to re-decide (events that are not triggers) and the triggers recorded then."""

    inputs: list[Event]
    recorded: list[Trigger]


def load(settings: ClickHouseSettings, scope: Scope) -> History:
    subjects: list[str] | None = None
    if scope.job is not None:
        subjects = [scope.job]
    elif scope.node is not None:
        # A node's story includes the jobs that ran on it: their exits are what node rules count.
        subjects = [scope.node, *jobs_on_node(settings, scope.node, scope.until)]
    events = events_between(settings, scope.since, scope.until, subjects)
    recorded: dict[str, Event] = {str(e.event_id): e for e in events if isinstance(e, Trigger)}
    if scope.node is not None:
        missing = [
            t
            for t in triggers_naming(settings, scope.node, scope.since, scope.until)
            if t not in recorded
        ]
        recorded.update(events_by_id(settings, missing))
    triggers = sorted((t for t in recorded.values() if isinstance(t, Trigger)), key=event_time_key)
    return History([e for e in events if not isinstance(e, Trigger)], triggers)
