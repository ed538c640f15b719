"""What every entity (job, node, node set) has: the rule engine's memo and `updated_at`."""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from schemas.envelope import Event
from streams.state.memo import RuleMemo


class Entity(BaseModel):
    model_config = ConfigDict(frozen=True)

    rule_memo: RuleMemo = RuleMemo()
    updated_at: datetime | None = None  # event time of the last event that changed it

    @property
    def resident(self) -> bool:
        """Worth keeping decoded in the worker's memory (`streams.faust.state_cache`): one that
        will hear more soon. A settled one is read from its table again if it ever does."""
        return True


E = TypeVar("E", bound=Entity)


def stamped(state: E | None, current: E, folded: E, event: Event) -> E:
    """`folded`, stamped; the very same object when the event changed nothing, so callers can
    tell (by identity) that there is nothing to write."""
    if folded is current and state is not None:
        return current
    latest = max(filter(None, (current.updated_at, event.occurred_at)))
    return folded.model_copy(update={"updated_at": latest})
