"""The brain, pure: events in order → state → triggers, with every table as a plain dict.

The Faust agents keep the same state in Faust tables and call the same `step`; unit tests and
replay use `Brain` directly, so live, tests and replay decide identically. Feed events in
event-time order; call `tick(now)` wherever the live worker's clock would have ticked (replay can
tick at the same instants, e.g. every `tick_interval_s` of event time).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from schemas.envelope import Event
from schemas.events import Trigger
from streams.entities import JOBS, KINDS, NODE_SETS, NODES, Kind, forwarded, kind_of, step
from streams.rules.registry import RuleEngine
from streams.state.internal import tick
from streams.state.node import Node
from streams.state.node_set import NodeSet
from streams.state.training_job import TrainingJob


class Brain:
    """All of the streams' state in memory."""

    def __init__(self, engine: RuleEngine) -> None:
        self.engine = engine
        self.tables: dict[str, dict[str, Any]] = {kind.table: {} for kind in KINDS}

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
        """Let time pass: rules on ticks see running jobs and every node at `now`."""
        triggers: list[Trigger] = []
        for kind in (JOBS, NODES):
            assert kind.tick is not None
            for key, state in sorted(self.tables[kind.table].items()):
                if getattr(state, "ticks", True):
                    triggers.extend(self._step(kind, tick(kind.tick, key, state.cluster, now)))
        return triggers

    def _step(self, kind: Kind, event: Event) -> list[Trigger]:
        table = self.tables[kind.table]
        result = step(kind, table.get(event.subject), [event], self.engine)
        table[event.subject] = result.state
        triggers = list(result.triggers)
        for derived in result.forwards:
            triggers.extend(self.handle(derived))
        return triggers
