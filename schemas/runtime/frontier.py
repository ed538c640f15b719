"""How far a stream of events has reached in event time: its own clock, for judging silence.

A fleet reporting as it goes brings events about as old as the moment they travel; history
arriving late (a simulated day sent in a minute, an agent's spool after an outage) brings
events far older than the clock. Judged by the clock, every node of such history is silent
while it arrives. Judged by the stream's frontier (the newest event time read, advanced by the
time since the record bringing it was written) it is the history's own time, and for a live
fleet the clock, less the moments in flight: a stream that falls silent still ages with the
clock.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Frontier:
    event_s: float  # the newest event time read (epoch seconds)
    written_s: float  # when the record that brought it was written (epoch seconds)

    def at(self, now_s: float) -> float:
        """The stream's time when the clock reads `now_s`: never later than the clock."""
        return min(now_s, self.event_s + max(0.0, now_s - self.written_s))


def reached(held: Frontier | None, event_s: float, written_s: float | None) -> Frontier | None:
    """`held` moved on by a record written at `written_s` whose newest event happened at
    `event_s`; an older event moves nothing (a late one, a spool), nor does a record without a
    time (-1 from an old producer)."""
    if written_s is None or written_s < 0 or (held is not None and event_s <= held.event_s):
        return held
    return Frontier(event_s, written_s)
