"""Failure timestamps kept in event time, and counts over tumbling or hopping windows.

Windows are derived at read time from a bounded list stored in the state, so live processing,
tests and replay count exactly the same failures whatever the wall clock says.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field, model_validator

from streams.state.bounds import FAILURES_BYTES_KEPT, FAILURES_KEPT, ID_CHARS_MAX, newest

RETENTION_S = 7 * 24 * 3600.0


class Failure(BaseModel):
    model_config = ConfigDict(frozen=True)

    at: datetime
    job_id: str
    attempt: int
    cause: uuid.UUID


class WindowConfig(BaseModel):
    """Windows `window_s` long starting every `hop_s`: equal → tumbling, hop shorter → hopping."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    window_s: float = Field(default=3600.0, gt=0, le=RETENTION_S)
    hop_s: float | None = Field(default=None, gt=0, description="Defaults to window_s (tumbling).")

    @model_validator(mode="after")
    def _hop_fits(self) -> WindowConfig:
        if self.hop_s is not None and self.hop_s > self.window_s:
            raise ValueError("hop_s must not exceed window_s")
        return self

    @property
    def step_s(self) -> float:
        return self.hop_s or self.window_s


def record(failures: tuple[Failure, ...], failure: Failure) -> tuple[Failure, ...]:
    """Add a failure once (redelivery-safe), drop those older than the retention horizon."""
    if len(failure.job_id) > ID_CHARS_MAX or any(
        f.job_id == failure.job_id and f.attempt == failure.attempt for f in failures
    ):
        return failures
    horizon = failure.at - timedelta(seconds=RETENTION_S)
    kept = sorted((*failures, failure), key=lambda f: f.at)
    recent = [f for f in kept if f.at >= horizon]
    return newest(recent, FAILURES_KEPT, FAILURES_BYTES_KEPT, _size)


def _size(failure: Failure) -> int:
    return len(failure.__pydantic_serializer__.to_json(failure))


def window_starts(at: datetime, config: WindowConfig) -> list[datetime]:
    """Starts of every window containing `at`, oldest first (windows are aligned to the epoch)."""
    t = at.timestamp()
    step = config.step_s
    last = (t // step) * step
    starts = []
    start = last
    while start > t - config.window_s:
        starts.append(start)
        start -= step
    return [datetime.fromtimestamp(s, UTC) for s in reversed(starts)]


def in_window(
    failures: tuple[Failure, ...], start: datetime, config: WindowConfig
) -> list[Failure]:
    end = start + timedelta(seconds=config.window_s)
    return [f for f in failures if start <= f.at < end]


def count_at(failures: tuple[Failure, ...], at: datetime, config: WindowConfig) -> int:
    """The largest count among the windows containing `at`."""
    return max((len(in_window(failures, s, config)) for s in window_starts(at, config)), default=0)
