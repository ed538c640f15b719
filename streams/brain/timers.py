"""Timers per entity: which entities a clock tick can concern, instead of ticking them all.

A tick lets rules notice what did not happen, and most ticks decide nothing: a node that
heartbeats is not silent, a job that checkpoints is not stalled. Rules on ticks say from when
they may decide (`@rule(..., due=...)`); the rule engine adds its own instants (a `for_s` that
runs out, a cooldown that ends). An entity is ticked at `now` when one of those instants has
come and is not older than the entity's last tick: an instant the last tick already saw was
decided then. An event folded into the entity forgets its last tick, since a changed state may
hold a condition that was already due.

The tick at exactly an instant is evaluated and so is the next one, since limits may be compared
with `>`; the cost is one extra tick per instant. What a sweep over every entity decides, this
decides at the same ticks, provided every `due` keeps its promise. A tick rule without `due`
makes every entity of its kind due on every tick, as before timers.
"""

from __future__ import annotations

import heapq
from datetime import UTC, datetime, timedelta
from typing import Any

from streams.rules.registry import RuleEngine
from streams.state.entities import Kind

ALWAYS = datetime.min.replace(tzinfo=UTC)
STALE_SLACK = 1024  # heap entries beyond twice the scheduled ones before they are dropped


def due_instants(engine: RuleEngine, kind: Kind, state: Any) -> list[datetime] | None:
    """Every instant from which a tick may decide something for `state`; None: any tick may."""
    if kind.tick is None or (_has_ticks(type(state)) and not state.ticks):
        return []
    memo = getattr(state, "rule_memo", None)
    instants: list[datetime] = []
    for bound in engine.on(kind.tick):
        deciding = bound.deciding(state)
        if deciding is None:  # off in this subject's scope
            continue
        spec, (_, config, key) = bound.spec, deciding
        if spec.due is None:
            return None
        instants.extend(spec.due(state, config))
        if memo is None:
            continue
        since = memo.pending_since.get(key)
        if since is not None and config.for_s > 0:
            instants.append(since + timedelta(seconds=config.for_s))
        fired = memo.fired.get(key)
        if fired is not None and config.cooldown_s > 0:
            instants.append(fired.at + timedelta(seconds=config.cooldown_s))
    return instants


def _has_ticks(model: type) -> bool:
    """Whether a state's model says when it may be ticked (a job: while it runs). Asked once a
    model: `getattr(state, "ticks", True)` on a model without it (a node) had pydantic raise and
    format an AttributeError at every change: 5.7-6.0 µs a node's `next_due`, 3.8 without."""
    found = _TICKS.get(model)
    if found is None:
        found = _TICKS[model] = hasattr(model, "ticks")
    return found


_TICKS: dict[type, bool] = {}


def next_due(
    engine: RuleEngine, kind: Kind, state: Any, ticked_at: datetime | None
) -> datetime | None:
    """The first instant from which a tick may decide something new for `state`, last ticked at
    `ticked_at` (None: never, or changed since); None: no tick will until the state changes."""
    instants = due_instants(engine, kind, state)
    if instants is None:
        return ticked_at or ALWAYS
    fresh = [i for i in instants if ticked_at is None or i >= ticked_at]
    return min(fresh, default=None)


class Timers:
    """The due instants of entities, earliest first: of every entity of a brain (ticks in event
    time), or of one partition of a live worker's table.

    Call `changed` after an event is folded into an entity and `ticked` after it was ticked;
    `due(kind, now)` takes out the entities of `kind` to tick at `now`, in key order.
    """

    def __init__(self, engine: RuleEngine) -> None:
        self.engine = engine
        self._heap: dict[str, list[tuple[datetime, str]]] = {}
        self._scheduled: dict[tuple[str, str], datetime] = {}
        self._ticked_at: dict[tuple[str, str], datetime] = {}

    def changed(self, kind: Kind, key: str, state: Any) -> None:
        self._ticked_at.pop((kind.table, key), None)
        self._schedule(kind, key, state)

    def was_ticked(self, kind: Kind, key: str) -> bool:
        """Ticked since it last changed: an event that leaves its state as it was still makes it
        due again (`changed`); otherwise such an event changes nothing here."""
        return (kind.table, key) in self._ticked_at

    def ticked(self, kind: Kind, key: str, state: Any, now: datetime) -> None:
        self._ticked_at[(kind.table, key)] = now
        self._schedule(kind, key, state)

    def due(self, kind: Kind, now: datetime) -> list[str]:
        heap = self._heap.get(kind.table, [])
        keys = set()
        while heap and heap[0][0] <= now:
            at, key = heapq.heappop(heap)
            if self._scheduled.get((kind.table, key)) == at:
                del self._scheduled[(kind.table, key)]
                keys.add(key)
        return sorted(keys)

    def _schedule(self, kind: Kind, key: str, state: Any) -> None:
        slot = (kind.table, key)
        due = next_due(self.engine, kind, state, self._ticked_at.get(slot))
        if due == self._scheduled.get(slot):
            return
        if due is None:
            self._scheduled.pop(slot, None)  # its heap entry goes stale and is skipped
            return
        self._scheduled[slot] = due
        heap = self._heap.setdefault(kind.table, [])
        heapq.heappush(heap, (due, key))
        if len(heap) > 2 * len(self._scheduled) + STALE_SLACK:
            self._compact(kind.table)

    def _compact(self, table: str) -> None:
        """Drop the stale entries a live worker's heap would otherwise keep until their time
        comes: every reschedule leaves one (a node turning idle and busy, say, for hours)."""
        heap = [(at, key) for (t, key), at in self._scheduled.items() if t == table]
        heapq.heapify(heap)
        self._heap[table] = heap
