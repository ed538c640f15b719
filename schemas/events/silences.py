"""Silences: an operator holds what rules decide on a cluster, some nodes, a rule or an action,
for a while. Decisions are still made and recorded, each as held by the silence, and not carried
out; when it ends, rules decide afresh on the state then. Operators' own commands are never held.

Signed with the operator's key (`schemas.operators`) like commands; keyed by the silence's id on
a compacted topic, so every action worker reads them all back on start.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from pydantic import Field

from schemas.envelope import Event, Payload
from schemas.limits import NAME, TEXT, WORD, Timestamp
from schemas.registry import event

DURATION_MAX_S = 366 * 24 * 3600.0  # a silence of more than a year is a rule switched off


class SilenceAddedPayload(Payload):
    silence_id: str = Field(
        min_length=1, max_length=WORD, description="Also the event's subject and Kafka key."
    )
    nodes: str | None = Field(
        default=None,
        max_length=TEXT,
        description="A hostlist (Slurm syntax, `gpu-[01-08]`) of the nodes it holds decisions "
        "about; None: every node and job of the cluster.",
    )
    rule: str | None = Field(default=None, max_length=NAME, description="Only this rule.")
    action: str | None = Field(
        default=None,
        max_length=NAME,
        description="Only this trigger type (`QuarantineNodes`) or action (`quarantine_nodes`); "
        "None: every action but notifications, which still tell people what was held.",
    )
    starts_at: Timestamp
    duration_s: float = Field(gt=0, le=DURATION_MAX_S, description="It ends this long after.")
    reason: str = Field(min_length=1, max_length=TEXT)
    operator: str = Field(min_length=1, max_length=NAME, description="Who added it (signed).")

    @property
    def ends_at(self) -> datetime:
        return self.starts_at + timedelta(seconds=self.duration_s)


@event(topic="silences")
class SilenceAdded(Event):
    type: Literal["SilenceAdded"] = "SilenceAdded"
    payload: SilenceAddedPayload


class SilenceExpiredPayload(Payload):
    silence_id: str = Field(min_length=1, max_length=WORD)
    operator: str = Field(min_length=1, max_length=NAME, description="Who ended it (signed).")
    reason: str | None = Field(default=None, max_length=TEXT)


@event(topic="silences")
class SilenceExpired(Event):
    """An operator ended a silence before its time (one that runs out needs no event)."""

    type: Literal["SilenceExpired"] = "SilenceExpired"
    payload: SilenceExpiredPayload
