"""What the rule engine remembers per subject: pending `for_s` conditions, recent firings, and
the signals rules chose to keep (`streams.rules.signals`).

It lives inside each entity's state (job, node, node set), so it is persisted, restored and
replayed exactly like the rest of the state.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict

FIRED_IDS_KEPT = 16  # per rule: enough to recognise a redelivered decision, bounded


class Fired(BaseModel):
    model_config = ConfigDict(frozen=True)

    at: datetime
    trigger_ids: tuple[uuid.UUID, ...] = ()


class Signal(BaseModel):
    """One event a rule chose to remember about a subject, in event time."""

    model_config = ConfigDict(frozen=True)

    at: datetime
    event_id: uuid.UUID
    key: str = ""


class RuleMemo(BaseModel):
    model_config = ConfigDict(frozen=True)

    pending_since: dict[str, datetime] = {}
    # How many evaluations in a row found the condition held (`for_count`); kept beside
    # `pending_since`, and forgotten with it once an evaluation finds it false.
    pending_count: dict[str, int] = {}
    fired: dict[str, Fired] = {}
    signals: dict[str, tuple[Signal, ...]] = {}
