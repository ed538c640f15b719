"""Dead letters: what a consumer could not decode, kept with its reason and raw bytes."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Literal

import structlog
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from schemas.envelope import utcnow
from schemas.metrics.catalog import DEAD_LETTERS


class DeadLetter(BaseModel):
    """The record on the dead-letter topic. `raw` travels base64-encoded in JSON."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64"
    )

    kind: Literal["DeadLetter"] = "DeadLetter"
    reason: str
    detail: str = ""
    consumer: str = Field(description="Which consumer gave up on it.")
    topic: str
    partition: int
    offset: int
    key: bytes | None = None
    raw: bytes
    dead_lettered_at: AwareDatetime = Field(default_factory=utcnow)

    def to_bytes(self) -> bytes:
        return self.__pydantic_serializer__.to_json(self)

    @classmethod
    def from_bytes(cls, data: bytes) -> DeadLetter:
        return cls.model_validate_json(data)


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
