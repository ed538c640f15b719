"""Run the current rule set over history and set its triggers beside the recorded ones."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel

from schemas.envelope import Event
from schemas.events import Trigger
from streams.brain.process import Brain, Clock
from streams.history.query import event_time_key
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings

Status = Literal["same", "changed", "new", "missing"]
PROGRESS_EVERY = 1000


def current_brain(settings: StreamsSettings | None = None) -> Brain:
    """The brain as the live streams worker builds it: same rule modules, same config."""
    settings = settings or StreamsSettings()
    return Brain(RuleEngine.load(settings.rule_modules, settings.rule_config))


def rerun_current(
    events: Iterable[Event],
    settings: StreamsSettings | None = None,
    start: datetime | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> list[Trigger]:
    """`rerun` with the live worker's rules and clock."""
    settings = settings or StreamsSettings()
    return rerun(events, current_brain(settings), settings.tick_interval_s, start, on_progress)


def default_warmup_s(settings: StreamsSettings | None = None) -> float:
    """The longest duration (any `*_s` setting, windows included) in the loaded rules' config.

    State older than that can no longer change a decision of these rules (a window, a silence
    limit, a cooldown), so folding that much history before a range decides its start as live.
    """
    engine = current_brain(settings).engine
    return max((_longest_s(c) for bound in engine.rules for c in bound.configs), default=0.0)


def _longest_s(config: BaseModel) -> float:
    found = 0.0
    for name, value in config:
        if isinstance(value, BaseModel):
            found = max(found, _longest_s(value))
        elif name.endswith("_s") and isinstance(value, int | float):
            found = max(found, float(value))
    return found


def rerun(
    events: Iterable[Event],
    brain: Brain,
    tick_interval_s: float,
    start: datetime | None = None,
    on_progress: Callable[[int], None] | None = None,
    warmup_decided: dict[str, datetime] | None = None,
) -> list[Trigger]:
    """`rerun_stream` over events in any order: sorted first, so held in memory."""
    ordered = sorted(events, key=event_time_key)
    return rerun_stream(ordered, brain, tick_interval_s, start, on_progress, warmup_decided)


def rerun_stream(
    events: Iterable[Event],
    brain: Brain,
    tick_interval_s: float,
    start: datetime | None = None,
    on_progress: Callable[[int], None] | None = None,
    warmup_decided: dict[str, datetime] | None = None,
) -> list[Trigger]:
    """Feed events, in event-time order, so the same range always decides the same.

    The clock ticks at every multiple of `tick_interval_s` (since the epoch) of event time, as
    the live worker's timer would have, up to the last event: past it, silence would only mean
    that the range ended. Each tick ticks only the entities something is due for
    (`streams.brain.timers`), so a quiet fleet costs nothing between its events. Events and ticks
    before `start` are the warm-up: they build state, and what they decide is dropped (it belongs
    to the range before; `warmup_decided`, if given, gets each such decision's id and time, which
    names a live decision of the range that replay's clock decided a tick early). `on_progress`
    hears how many events are done, every `PROGRESS_EVERY` (a per-event call would cost replay
    speed). An event earlier than the one before it is an error (`ValueError`): the stream is read
    once, so it cannot be sorted here.
    """
    triggers: list[Trigger] = []
    clock = Clock(brain, tick_interval_s)
    dropped = warmup_decided if warmup_decided is not None else {}
    last = float("-inf")
    begin = start.timestamp() if start is not None else float("-inf")
    for done, event in enumerate(events):
        if on_progress is not None and done % PROGRESS_EVERY == 0:
            on_progress(done)
        at = event.occurred_at.timestamp()
        if at < last:
            raise ValueError(f"event {event.event_id} at {event.occurred_at} is out of order")
        last = at
        if clock.next_s is None or clock.next_s <= at:  # most events: no tick due, no call
            for ticked_at, ticked in clock.until(at):
                _keep(ticked, ticked_at >= begin, triggers, dropped)
        _keep(brain.handle(event), at >= begin, triggers, dropped)
    return triggers


def _keep(
    decided: list[Trigger], in_range: bool, kept: list[Trigger], dropped: dict[str, datetime]
) -> None:
    if in_range:
        kept.extend(decided)
    else:
        dropped.update((str(t.event_id), t.occurred_at) for t in decided)


@dataclass(frozen=True)
class Decision:
    """One trigger id with what was decided then and what the rules decide now."""

    trigger_id: str
    status: Status
    then: Trigger | None
    now: Trigger | None

    @property
    def trigger(self) -> Trigger:
        found = self.now or self.then
        assert found is not None
        return found


def compare(now: Iterable[Trigger], then: Iterable[Trigger]) -> list[Decision]:
    """Match by deterministic trigger id: same, changed (same id, other payload), new, missing."""
    now_by_id = {str(t.event_id): t for t in now}
    then_by_id = {str(t.event_id): t for t in then}
    decisions = []
    for tid in now_by_id.keys() | then_by_id.keys():
        n, t = now_by_id.get(tid), then_by_id.get(tid)
        status: Status
        if n is None:
            status = "missing"
        elif t is None:
            status = "new"
        else:
            status = "same" if n.payload == t.payload and n.type == t.type else "changed"
        decisions.append(Decision(tid, status, t, n))
    return sorted(decisions, key=lambda d: event_time_key(d.trigger))
