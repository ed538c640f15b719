"""What a replay reads, wherever it reads it from: a `Source` loads a `History`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from schemas.envelope import Event
from schemas.events import Trigger
from streams.history.query import event_time_key


@dataclass(frozen=True)
class History:
    """A range to re-decide and what was decided over it then.

    `warmup` precedes `since`: it is folded into state first, and what it decides is neither
    shown nor compared. `undecodable` counts messages a source could not decode, by reason.
    """

    since: datetime
    until: datetime
    warmup: list[Event]
    inputs: list[Event]
    recorded: list[Trigger]
    undecodable: dict[str, int] = field(default_factory=dict)


class Source(Protocol):
    def load(self, warmup_s: float) -> History: ...

    def events_by_id(self, ids: Sequence[str]) -> dict[str, Event]: ...

    def action_results_for(self, trigger_ids: Sequence[str]) -> list[Event]: ...

    def status_before(
        self, subjects: Sequence[str], before: datetime
    ) -> dict[str, tuple[datetime, dict[str, Any]]]:
        """Each subject's last status before `before`, with its time, where the source can
        tell."""
        ...


def split(facts: Iterable[Event], since: datetime) -> tuple[list[Event], list[Event]]:
    """Non-trigger events → (warm-up before `since`, inputs from it), each in event-time order."""
    ordered = sorted((e for e in facts if not isinstance(e, Trigger)), key=event_time_key)
    return (
        [e for e in ordered if e.occurred_at < since],
        [e for e in ordered if e.occurred_at >= since],
    )


def without_outcomes(events: Iterable[Event], withheld: frozenset[str]) -> Iterator[Event]:
    """Events, less what was done about the `withheld` decisions (their trigger ids): action
    results and benchmarks."""
    for event in events:
        trigger_id = getattr(event.payload, "trigger_id", None)
        if trigger_id is None or str(trigger_id) not in withheld:
            yield event
