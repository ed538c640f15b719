"""The brain, pure: events in order → state → triggers, with every table as a plain dict.

The Faust agents keep the same state in Faust tables and call the same `step`; unit tests and
replay use `Brain` directly, so live, tests and replay decide identically. Feed events in
event-time order; call `tick(now)` wherever the live worker's clock would have ticked (replay can
tick at the same instants, e.g. every `tick_interval_s` of event time): it ticks the entities
something is due for (`streams.brain.timers`), as the live worker does.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from schemas.envelope import Event
from schemas.events import Trigger
from schemas.events.incidents import IncidentEvent
from streams.brain.timers import Timers
from streams.brain.views import Views
from streams.rules.registry import RuleEngine
from streams.state.entities import (
    INCIDENTS,
    JOBS,
    KINDS,
    NODE_SETS,
    NODES,
    Kind,
    Step,
    forwarded,
    kind_of,
    step,
)
from streams.state.internal import tick
from streams.state.node import Node
from streams.state.node_set import NodeSet
from streams.state.training_job import TrainingJob


class Brain:
    """All of the streams' state in memory (a part of it: `streams.brain.parts.PartBrain`)."""

    def __init__(self, engine: RuleEngine) -> None:
        self.engine = engine
        self.tables: dict[str, dict[str, Any]] = {kind.table: {} for kind in KINDS}
        self.timers = Timers(engine)
        self.views = Views(engine)
        # Every incident as the live worker last published it (`centrality incidents`).
        self.incidents: dict[str, IncidentEvent] = {}

    @property
    def jobs(self) -> dict[str, TrainingJob]:
        return self.tables[JOBS.table]

    @property
    def nodes(self) -> dict[str, Node]:
        return self.tables[NODES.table]

    @property
    def node_sets(self) -> dict[str, NodeSet]:
        return self.tables[NODE_SETS.table]

    def handle(self, event: Event) -> list[Trigger]:
        """Fold one event (and everything it implies for other entities); its triggers."""
        kind = kind_of(event)
        if kind is None:  # no table of its own (an action result): only what it means for others
            return [t for derived in forwarded(event) for t in self.handle(derived)]
        return self._step(kind, event)

    def tick(self, now: datetime) -> list[Trigger]:
        """Let time pass: rules on ticks see, at `now`, the running jobs and the nodes that
        something may be due for. Jobs first: what their ticks tell nodes is seen by nodes."""
        triggers: list[Trigger] = []
        for kind in (JOBS, NODES):
            assert kind.tick is not None
            table = self.tables[kind.table]
            for key in self.timers.due(kind, now):
                triggers.extend(self._step(kind, tick(kind.tick, key, table[key].cluster, now)))
        return triggers

    def _step(self, kind: Kind, event: Event) -> list[Trigger]:
        result = self._fold(kind, event)
        triggers = list(result.triggers)
        for derived in result.forwards:
            triggers.extend(self.handle(derived))
        return triggers

    def _fold(self, kind: Kind, event: Event) -> Step:
        """`step` one entity, its state kept in its table and its timers: what it decided and
        what other entities must hear."""
        table = self.tables[kind.table]
        before = table.get(event.subject)
        result = step(kind, before, [event], self.engine)
        table[event.subject] = result.state
        if kind is INCIDENTS and result.changed:
            published = self.views.status_change(kind, before, result.state, event)
            if isinstance(published, IncidentEvent):
                self.incidents[published.subject] = published
        if kind.tick is not None and isinstance(event, kind.tick):
            self.timers.ticked(kind, event.subject, result.state, event.occurred_at)
        elif result.changed:  # most samples change nothing, and so nothing about what is due
            self.timers.changed(kind, event.subject, result.state)
        return result


class Clock:
    """A brain's clock in event time, as the live worker's timer would have ticked: at every
    multiple of `interval_s` since the epoch, from the first event on, never past the event at
    hand (past the last one, silence would only mean that the events ended)."""

    def __init__(self, brain: Brain, interval_s: float) -> None:
        self.brain = brain
        self.interval_s = interval_s
        self.next_s: float | None = None

    def until(self, at_s: float) -> Iterator[tuple[float, list[Trigger]]]:
        """Tick up to `at_s` (epoch seconds, included): each tick's time and its triggers."""
        if self.next_s is None:
            self.next_s = (at_s // self.interval_s + 1) * self.interval_s
        while self.next_s <= at_s:
            now = self.next_s
            self.next_s += self.interval_s
            yield now, self.brain.tick(datetime.fromtimestamp(now, UTC))
