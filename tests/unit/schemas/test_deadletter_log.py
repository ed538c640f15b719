"""Dead letters in the log: a storm says it is happening without a line per message."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from schemas.deadletter import DeadLetter
from schemas.runtime import deadletter
from schemas.runtime.deadletter import LogThrottle, count_dead_letter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_key_gets_its_burst_per_interval_then_the_next_line_says_how_many_were_held() -> None:
    clock = Clock()
    throttle = LogThrottle(burst=3, interval_s=10, clock=clock)
    assert [throttle.admit("a") for _ in range(5)] == [0, 0, 0, None, None]
    assert throttle.admit("b") == 0  # keys are throttled apart
    clock.now = 9.9
    assert throttle.admit("a") is None
    clock.now = 10.0
    assert throttle.admit("a") == 3
    assert throttle.admit("a") == 0


def test_every_dead_letter_is_counted_though_few_are_logged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(deadletter, "_throttle", LogThrottle(burst=2, interval_s=3600))
    letter = DeadLetter(
        reason="malformed", consumer="t-dl", topic="jobs", partition=0, offset=1, raw=b"x"
    )
    before = deadletter.DEAD_LETTER_COUNTS[("t-dl", "malformed")]
    with capture_logs() as logs:
        for _ in range(100):
            count_dead_letter(letter)
    assert deadletter.DEAD_LETTER_COUNTS[("t-dl", "malformed")] - before == 100
    lines = [log for log in logs if log["event"] == "dead_letter"]
    assert len(lines) == 2
    assert lines[0]["reason"] == "malformed" and lines[0]["topic"] == "jobs"
