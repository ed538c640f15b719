"""The step times the tailer read, per job and rank, until it sends their summary.

A rank whose log shows two readers' times for the same steps (Megatron-DeepSpeed prints
Megatron's iteration line and DeepSpeed's `iter time` for every step; NeMo's bar is Lightning's)
must not count its steps twice: within an interval a rank's summary keeps one trainer's times,
the one whose reader comes first in `READERS` (a trainer's own timer before a progress bar).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from collectors.logs.steps import READERS, StepTime
from schemas.events.steps import StepTimesObservedPayload, Trainer

Key = tuple[str, int | None]  # the job, and the rank (None: the line named none)

# A trainer's place: that of its first reader (later ones would overwrite, so in reverse).
_PREFERENCE: dict[Trainer, int] = {r.trainer: i for i, r in reversed(list(enumerate(READERS)))}


@dataclass
class _Pending:
    trainer: Trainer
    seconds: list[float] = field(default_factory=list)
    last_step: int | None = None


class StepSummaries:
    def __init__(self, node: str) -> None:
        self.node = node
        self._pending: dict[Key, _Pending] = {}

    def add(self, job: str, rank: int | None, found: StepTime) -> None:
        pending = self._pending.get((job, rank))
        if pending is None or _PREFERENCE[found.trainer] < _PREFERENCE[pending.trainer]:
            pending = self._pending[(job, rank)] = _Pending(found.trainer)
        elif found.trainer != pending.trainer:
            return  # the same steps as another reader saw them
        pending.seconds.append(found.seconds)
        if found.step is not None:
            pending.last_step = found.step

    def ready(self, job: str | None = None) -> list[tuple[Key, StepTimesObservedPayload]]:
        """A summary per rank of what is pending (of `job` alone if given), not yet forgotten."""
        return [
            (key, self._summary(key[1], pending))
            for key, pending in self._pending.items()
            if job is None or key[0] == job
        ]

    def forget(self, key: Key) -> None:
        """Called once `key`'s summary is sent: its next interval starts empty."""
        del self._pending[key]

    def _summary(self, rank: int | None, pending: _Pending) -> StepTimesObservedPayload:
        return StepTimesObservedPayload(
            node=self.node,
            rank=rank,
            steps=len(pending.seconds),
            median_s=statistics.median(pending.seconds),
            max_s=max(pending.seconds),
            last_step=pending.last_step,
            trainer=pending.trainer,
        )
