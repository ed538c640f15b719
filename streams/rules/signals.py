"""A rule's own memory of a subject: the signals it chose to keep, to count or window them.

A rule registered with `keep_signals=N` takes a fourth argument, its `Signals` for the subject
at hand: it `record`s the events that matter to it (under a key of its choosing) and asks how many
fell within a span of event time. The engine keeps them in the subject's rule memo, in the table,
so they are stored, restored after a failover and replayed like the rest of the state; the rule
stays a function of what it is given.

Bounded like every state (`streams.state.bounds`): the newest N per rule and subject, none older
than `RETENTION_S`; an event is kept once per key, so a redelivered or replayed event never
counts twice.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from schemas.envelope import Event
from streams.state.bounds import clip
from streams.state.memo import Signal
from streams.state.windows import RETENTION_S

KEEP_SIGNALS_MAX = 256  # per rule and subject: a window over more is a job for a state field
KEY_CHARS_MAX = 128


class Signals:
    """What one rule remembers of one subject, as of the event being decided (`now`)."""

    def __init__(self, kept: tuple[Signal, ...], now: datetime, keep: int) -> None:
        self._kept = kept
        self._now = now
        self._keep = keep
        self.changed = False

    @property
    def kept(self) -> tuple[Signal, ...]:
        """Every signal kept, oldest first."""
        return self._kept

    def record(self, event: Event, key: str = "") -> None:
        """Remember `event` under `key` (once: the same event and key again changes nothing)."""
        key = clip(key, KEY_CHARS_MAX)
        if any(s.event_id == event.event_id and s.key == key for s in self._kept):
            return
        horizon = self._now - timedelta(seconds=RETENTION_S)
        signal = Signal(at=event.occurred_at, event_id=event.event_id, key=key)
        kept = sorted((*self._kept, signal), key=lambda s: s.at)
        self._kept = tuple(s for s in kept if s.at >= horizon)[-self._keep :]
        self.changed = True

    def within(self, seconds: float, key: str | None = None) -> tuple[Signal, ...]:
        """The signals (of `key`, or all) of the last `seconds` of event time up to now, the
        bounds included, oldest first."""
        since = self._now - timedelta(seconds=seconds)
        return tuple(
            s
            for s in self._kept
            if since <= s.at <= self._now and (key is None or s.key == clip(key, KEY_CHARS_MAX))
        )

    def count(self, seconds: float, key: str | None = None) -> int:
        return len(self.within(seconds, key))

    def forget(self, key: str | None = None) -> None:
        """Drop the signals (of `key`, or all): counting starts afresh, e.g. once the rule fired."""
        left = tuple(s for s in self._kept if key is not None and s.key != key)
        if left != self._kept:
            self._kept, self.changed = left, True
