"""Decisions timed to a running job's checkpoints (`slow_node`), from history: how each was
timed, what it was expected to cost and to save against taking the node out at once.

One decision per way chosen: a plan (a checkpoint asked for, or the next one waited for) and the
quarantine that carries it out share its figures, and count once, as the plan.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from schemas.envelope import Event
from schemas.events import Trigger

TYPES = ("QuarantineNodes", "RequestCheckpoint", "Notify")
PLANNED = ("ask", "at_checkpoint")


@dataclass
class Way:
    decisions: int = 0
    expected_gpu_h: float = 0.0
    saved_gpu_h: float = 0.0
    jobs: list[str] = field(default_factory=list)


def timed(events: Iterable[Event]) -> dict[str, Way]:
    """Per way chosen (now, ask, at_checkpoint, leave): the live decisions that chose it."""
    ways: dict[str, Way] = {}
    for e in events:
        timing = e.payload.timing if isinstance(e, Trigger) else None
        if timing is None or e.payload.shadow:
            continue
        if e.type == "QuarantineNodes" and timing.chosen in PLANNED:
            continue  # carries out its plan, counted there
        way = ways.setdefault(timing.chosen, Way())
        way.decisions += 1
        way.expected_gpu_h += timing.gpu_h.of()[timing.chosen]
        way.saved_gpu_h += timing.saved_gpu_h
        way.jobs.append(timing.job_id)
    return ways
