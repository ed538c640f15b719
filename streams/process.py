"""One message's worth of work, pure: fold its events into the job and collect the triggers.

The Faust agent, unit tests and (later) replay all call this, so they decide identically.
"""

from __future__ import annotations

from collections.abc import Sequence

from schemas.envelope import Event
from schemas.events import Trigger
from streams.rules.registry import RuleEngine
from streams.state.training_job import TrainingJob, apply


def fold_and_decide(
    state: TrainingJob | None, events: Sequence[Event], engine: RuleEngine
) -> tuple[TrainingJob | None, list[Trigger]]:
    triggers: list[Trigger] = []
    for event in events:
        state = apply(state, event)
        triggers.extend(engine.evaluate(state, event))
    return state, triggers
