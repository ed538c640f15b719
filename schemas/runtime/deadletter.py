"""Counting dead letters, and saying so in the log without flooding it (the record itself is the
contract's `schemas.deadletter.DeadLetter`)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import structlog

from schemas.deadletter import DeadLetter
from schemas.runtime.metrics.catalog import DEAD_LETTERS

# In-process totals by (consumer, reason): what `centrality` status views and tests read.
DEAD_LETTER_COUNTS: Counter[tuple[str, str]] = Counter()


log = structlog.get_logger("deadletter")


class LogThrottle:
    """At most `burst` log lines per key within `interval_s`; the next line let through says how
    many were held back meanwhile.

    Dead letters come in storms (a producer gone wrong sends thousands a second). Each one is
    counted and kept, raw bytes and all, on the dead-letter topic, so the log only has to say that
    it is happening; a line per message cost the streams worker half its time in such a storm.
    """

    def __init__(
        self, burst: int = 10, interval_s: float = 10.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.burst = burst
        self.interval_s = interval_s
        self.clock = clock
        self._windows: dict[str, tuple[float, int]] = {}  # key: (window start, lines in it)
        self._held: Counter[str] = Counter()

    def admit(self, key: str) -> int | None:
        """None: hold this line back. Otherwise let it through, with how many were held back
        since the last line of this key."""
        now = self.clock()
        start, lines = self._windows.get(key, (now, 0))
        if now - start >= self.interval_s:
            start, lines = now, 0
        if lines >= self.burst:
            self._held[key] += 1
            return None
        self._windows[key] = (start, lines + 1)
        return self._held.pop(key, 0)


_throttle = LogThrottle()


def count_dead_letter(letter: DeadLetter) -> None:
    """Count a dead letter, and say so in the log (throttled per consumer and reason)."""
    DEAD_LETTERS.labels(letter.consumer, letter.reason).inc()
    DEAD_LETTER_COUNTS[(letter.consumer, letter.reason)] += 1
    held = _throttle.admit(f"{letter.consumer}/{letter.reason}")
    if held is not None:
        log.warning(
            "dead_letter",
            consumer=letter.consumer,
            reason=letter.reason,
            topic=letter.topic,
            partition=letter.partition,
            offset=letter.offset,
            detail=letter.detail[:200],
            **({"held_back": held} if held else {}),
        )
