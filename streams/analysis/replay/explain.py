"""The chain behind one decision: its causes, recursively, and what was done about it."""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas.envelope import Event
from schemas.events import Trigger
from streams.analysis.replay.source import Source


@dataclass
class Cause:
    event_id: str
    event: Event | None  # None: the cause is not (or no longer) in history
    causes: list[Cause] = field(default_factory=list)


@dataclass(frozen=True)
class Explanation:
    trigger: Trigger
    causes: list[Cause]
    results: list[Event]


class UnknownTrigger(LookupError):
    pass


def explain(
    source: Source, trigger_id: str, known: dict[str, Trigger] | None = None
) -> Explanation:
    """`known` lets a trigger decided only by a replay (status new) be explained too."""
    trigger = (known or {}).get(trigger_id) or _as_trigger(source.events_by_id([trigger_id]))
    if trigger is None:
        raise UnknownTrigger(f"no trigger {trigger_id} in history or in this replay")
    return Explanation(
        trigger=trigger,
        causes=_causes(source, trigger, seen={trigger_id}),
        results=source.action_results_for([trigger_id]),
    )


def _as_trigger(found: dict[str, Event]) -> Trigger | None:
    event = next(iter(found.values()), None)
    return event if isinstance(event, Trigger) else None


def _causes(source: Source, trigger: Trigger, seen: set[str]) -> list[Cause]:
    ids = [str(i) for i in trigger.payload.caused_by]
    found = source.events_by_id(ids)
    out = []
    for eid in ids:
        event = found.get(eid)
        cause = Cause(eid, event)
        # A trigger may be caused by other triggers; `seen` guards against a cycle in bad data.
        if isinstance(event, Trigger) and eid not in seen:
            cause.causes = _causes(source, event, seen | {eid})
        out.append(cause)
    return out
