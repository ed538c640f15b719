"""A message's work for one entity, planned: pure, no Kafka. The worker
(`streams.faust.app.StreamsApp`) delivers the plan (sends, awaits, writes behind); everything
here can be run and checked without a broker.

A plan is the fold and the decisions (`streams.state.entities.step`), the status people read
made of the new state (`streams.brain.views`), every output encoded, and the bounds: a message
whose outputs are too many or too large, or whose state is too large, is `Refused` before
anything is sent (never retried: it is dead-lettered).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from schemas.codec import encode
from schemas.envelope import Event
from schemas.events import Trigger
from streams.brain.views import Views
from streams.state.bounds import STATE_BYTES_MAX
from streams.state.entities import Decides, Kind, Step, step

# Largest record we produce: Faust's producer refuses requests over 1,000,000 bytes.
OUTPUT_BYTES_MAX = 900_000


class Refused(Exception):
    """A message whose processing would produce too much, or too large: never retried."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


@dataclass(frozen=True)
class Plan:
    step: Step
    forwards: list[tuple[Event, bytes]]
    triggers: list[tuple[Trigger, bytes]]
    statuses: list[tuple[Event, bytes]]  # what people read, published with the decisions
    value: bytes  # the new state's document; empty when the state did not change

    @property
    def changed(self) -> bool:
        return self.step.changed


def plan(
    kind: Kind,
    state: Any,
    events: Sequence[Event],
    engine: Decides,
    views: Views,
    outputs_max: int,
) -> Plan:
    """Fold, decide, view, encode and bound one entity's events of a message."""
    return plan_records(kind, state, [events], engine, views, outputs_max)


def plan_records(
    kind: Kind,
    state: Any,
    records: Sequence[Sequence[Event]],
    engine: Decides,
    views: Views,
    outputs_max: int,
) -> Plan:
    """One entity's events of several records, planned as if each record were delivered in
    turn: each record's events folded from the state the one before left, with the status
    change people read after it, its outputs bounded per record. The state's document is made
    once, of the last state: the states between were never read by anyone. So the size bound
    is the last state's: a state between over it and under it again by the last record is not
    refused (the bound keeps stored states small; it decides nothing)."""
    result = Step(state)
    statuses: list[Event] = []
    for events in records:
        before = result.state
        folded = step(kind, before, events, engine)
        status = (
            views.status_change(kind, before, folded.state, events[-1]) if folded.changed else None
        )
        outputs = len(folded.forwards) + len(folded.triggers) + (status is not None)
        if outputs > outputs_max:
            raise Refused("amplification", f"{outputs} outputs > {outputs_max} per message")
        result.state = folded.state
        result.triggers += folded.triggers
        result.forwards += folded.forwards
        statuses += [status] if status is not None else []
    result.changed = result.state is not state
    planned = Plan(
        step=result,
        forwards=[(derived, encode(derived)) for derived in result.forwards],
        triggers=[(t, encode(t)) for t in result.triggers],
        statuses=[(status, encode(status)) for status in statuses],
        value=(
            result.state.__pydantic_serializer__.to_json(result.state) if result.changed else b""
        ),
    )
    if len(planned.value) > STATE_BYTES_MAX:
        raise Refused("state-too-large", f"{kind.table} value of {len(planned.value)} bytes")
    encoded = [*planned.forwards, *planned.triggers, *planned.statuses]
    largest = max((len(value) for _, value in encoded), default=0)
    if largest > OUTPUT_BYTES_MAX:
        raise Refused("output-too-large", f"an output of {largest} bytes")
    return planned
