"""A rule with a bug, for tests that need a real failure inside the streams worker: it raises on
the exit of any job whose id contains `explode`, and decides nothing otherwise."""

from __future__ import annotations

from collections.abc import Iterator

from schemas.events import JobExited, Trigger
from streams.rules.registry import RuleConfig, rule
from streams.state.training_job import TrainingJob


class ExplodedError(RuntimeError):
    pass


@rule("exploding", on=(JobExited,))
def exploding(job: TrainingJob, event: JobExited, config: RuleConfig) -> Iterator[Trigger]:
    if "explode" in event.subject:
        raise ExplodedError(f"the exploding rule, on {event.subject}")
    yield from ()
