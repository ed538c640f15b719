"""Decisions and what came of them, one row per action: a trigger, its action's start and its
result are one story, told on one row with the result said in words (`drained=n1`), never as
JSON cut to fit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from centrality.output import said, when
from schemas.envelope import Event
from schemas.events import ActionFailed, ActionHeld, ActionStarted, Trigger
from schemas.events.actions import ActionPayload


def decided_by(trigger: Trigger) -> str:
    p = trigger.payload
    return f"operator/{p.operator}" if p.operator else p.rule


def result_said(result: Event) -> str:
    """`succeeded: drained=n1, scheduler=slurm`, `refused: circuit breaker …`, `held: …`."""
    p = result.payload
    if isinstance(result, ActionHeld):
        return result.payload.said
    if isinstance(result, ActionFailed):
        how = "held" if p.held_by else "refused" if p.refused else "failed"
        return p.error if p.error.startswith(how) else f"{how}: {p.error}"
    detail = said(getattr(p, "detail", None) or {})
    forced = " (forced)" if getattr(p, "forced", False) else ""
    dry = " (dry run: only planned)" if p.dry_run else ""
    return f"succeeded{forced}{dry}" + ("" if detail == "-" else f": {detail}")


@dataclass(frozen=True)
class Action:
    """One decision (or command) and what became of it, as far as the events tell."""

    trigger_id: str
    trigger: Trigger | None
    started: Event | None
    result: Event | None

    @property
    def first(self) -> Event:
        found = self.trigger or self.started or self.result
        assert found is not None  # an action is made from one of them at least
        return found

    @property
    def at(self) -> datetime:
        return self.first.occurred_at

    @property
    def kind(self) -> str:
        first = self.first
        return first.type if isinstance(first, Trigger) else str(first.payload.trigger_type)

    @property
    def outcome(self) -> str:
        if self.result is not None:
            return result_said(self.result)
        if self.trigger is not None and self.trigger.payload.shadow:
            return "shadow: not carried out"
        return "under way" if self.started is not None else "no result yet"


def actions(events: Sequence[Event]) -> list[Action]:
    """The decisions and action results among `events`, one per trigger, in time order."""
    triggers: dict[str, Trigger] = {}
    started: dict[str, Event] = {}
    results: dict[str, Event] = {}
    for e in events:
        if isinstance(e, Trigger):
            triggers[str(e.event_id)] = e
        elif isinstance(e.payload, ActionPayload):
            kept = started if isinstance(e, ActionStarted) else results
            kept[str(e.payload.trigger_id)] = e
    ids = dict.fromkeys([*triggers, *started, *results])
    found = [Action(i, triggers.get(i), started.get(i), results.get(i)) for i in ids]
    return sorted(found, key=lambda a: a.at)


def row(action: Action) -> list[str]:
    """`decided at`, `action`, `by`, `why`, `result`, `done at` of one action."""
    t = action.trigger
    return [
        when(action.at),
        action.kind,
        decided_by(t) if t is not None else "",
        t.payload.reason if t is not None else "",
        action.outcome,
        when(action.result.occurred_at) if action.result is not None else "",
    ]


COLUMNS = ("decided at", "action", "by", "why", "result", "done at")
