"""Event-time windows, and the engine's for_s / cooldown / once-per-id."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from pydantic import ValidationError

from schemas.events import JobExited, Notify
from streams.rules.registry import RuleConfig, RuleConfigError, RuleEngine, rule
from streams.state.memo import RuleMemo
from streams.state.training_job import apply
from streams.state.windows import Failure, WindowConfig, count_at, record, window_starts
from streams.testing import T0, ended


def failure(at_s: float, job: str = "j", attempt: int = 1) -> Failure:
    return Failure(at=T0 + timedelta(seconds=at_s), job_id=job, attempt=attempt, cause=uuid.uuid4())


def failures(*at_s: float) -> tuple[Failure, ...]:
    out: tuple[Failure, ...] = ()
    for i, t in enumerate(at_s):
        out = record(out, failure(t, attempt=i + 1))
    return out


def test_tumbling_windows_do_not_count_across_their_boundary() -> None:
    tumbling = WindowConfig(window_s=100)
    seen = failures(10, 90, 110)
    assert count_at(seen, T0 + timedelta(seconds=95), tumbling) == 2
    assert count_at(seen, T0 + timedelta(seconds=110), tumbling) == 1


def test_hopping_windows_see_failures_that_straddle_a_boundary() -> None:
    hopping = WindowConfig(window_s=100, hop_s=50)
    seen = failures(60, 90, 110, 140)
    assert len(window_starts(T0 + timedelta(seconds=110), hopping)) == 2
    assert count_at(seen, T0 + timedelta(seconds=140), hopping) == 4


def test_failures_are_recorded_once_and_pruned_beyond_retention() -> None:
    f = failure(0)
    assert record(record((), f), f) == (f,)
    old_and_new = record((f,), failure(8 * 24 * 3600, attempt=2))
    assert [x.attempt for x in old_and_new] == [2]


def test_window_config_is_validated() -> None:
    with pytest.raises(ValidationError):
        WindowConfig(window_s=60, hop_s=120)
    with pytest.raises(ValidationError):
        WindowConfig(window_s=0)


class Always(RuleConfig):
    pass


@rule("test_always_notify", on=(JobExited,), config=Always)
def always(state: object, event: JobExited, config: Always) -> Iterator[Notify]:
    yield Notify.decide(
        cause=event,
        source="t",
        rule="test_always_notify",
        window=f"attempt-{event.payload.attempt}",
        reason="r",
        title="t",
        incident="i",
    )


def engine(**config: object) -> RuleEngine:
    return RuleEngine.load([always.__module__], {"test_always_notify": config})


def run(e: RuleEngine, *events: JobExited) -> list[int]:
    """How many triggers each event produced, threading the memo like the brain does."""
    memo = RuleMemo()
    counts = []
    for event in events:
        decided, memo = e.run(apply(None, event), event, memo)
        counts.append(len([t for t in decided if t.payload.rule == "test_always_notify"]))
    return counts


def test_the_same_decision_is_not_emitted_twice() -> None:
    assert run(engine(), ended("j", attempt=1), ended("j", attempt=1, at_s=5)) == [1, 0]


def test_cooldown_suppresses_other_decisions_for_a_while() -> None:
    e = engine(cooldown_s=60)
    counts = run(
        e,
        ended("j", attempt=1, at_s=0),
        ended("j", attempt=2, at_s=30),
        ended("j", attempt=3, at_s=61),
    )
    assert counts == [1, 0, 1]


def test_no_cooldown_holds_nothing_told_behind_the_last_decision() -> None:
    """An action result is stamped by the action worker's clock, which may be behind the
    events the rule decided on before (a simulation ahead of the clock, an agent's clock
    ahead): without a cooldown, what it decides goes out."""
    counts = run(engine(), ended("j", attempt=2, at_s=600), ended("j", attempt=1, at_s=0))
    assert counts == [1, 1]


def test_for_s_needs_the_condition_to_hold_that_long() -> None:
    e = engine(for_s=30)
    counts = run(
        e,
        ended("j", attempt=1, at_s=0),
        ended("j", attempt=1, at_s=10),
        ended("j", attempt=1, at_s=30),
    )
    assert counts == [0, 0, 1]


def test_negative_for_or_cooldown_is_rejected_at_load() -> None:
    with pytest.raises(RuleConfigError, match="for_s"):
        engine(for_s=-1)
    with pytest.raises(RuleConfigError, match="cooldown_s"):
        engine(cooldown_s=-1)
    with pytest.raises(RuleConfigError, match="threshold: Extra inputs"):
        engine(threshold=3)
