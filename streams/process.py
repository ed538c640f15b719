"""The brain, pure: events in order → state → triggers, with every table as a plain dict.

The Faust agents keep the same state in Faust tables and call the same functions; unit tests and
replay use `Brain` directly, so live, tests and replay decide identically.
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


class Brain:
    """All of the streams' state in memory; feed it events in event-time order."""

    def __init__(self, engine: RuleEngine) -> None:
        self.engine = engine
        self.jobs: dict[str, TrainingJob] = {}

    def handle(self, event: Event) -> list[Trigger]:
        if event.topic != "jobs":
            return []
        state, triggers = fold_and_decide(self.jobs.get(event.subject), [event], self.engine)
        if state is not None:
            self.jobs[event.subject] = state
        return triggers
