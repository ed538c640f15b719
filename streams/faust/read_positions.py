"""How far the worker has folded each input partition, so a clock tick never judges a silence
that is only unread.

Ticks carry the wall clock; heartbeats, samples and checkpoints come from Kafka. When the worker
is behind (started after an outage, given partitions by a rebalance, or with telemetry waiting in
its lane), a tick at the wall clock's time finds silent every node and stalled every job whose
news sits unread, and decides on it: "node lost" for the whole fleet after a restart, an idle job
cancelled while its busy samples wait to be read. So a tick is judged at the latest time all of
its partition's inputs have been folded up to: the tick's own time when each is folded to its
end, else the record time of the last record folded from one still behind (the earliest such),
and not at all while one behind has had nothing folded since it was assigned here.

Offsets alone do not say what is left to fold: a transactional producer (Kafka Streams or Flink
exactly-once, a librdkafka `transactional.id`) leaves a commit or abort marker after its records,
and an aborted transaction's records are skipped (the worker reads committed only). Both take
offsets and are never handed over, so where the consumer's fetch position has reached the end,
what is left is only what it handed over and the worker has not folded yet. The end is the high
watermark: behind a transaction still open, records (a steady node's heartbeats) wait unread
until it ends, and the partition is behind until then.

Read to its end, a partition may still only have reached the past: events arriving now that
happened long ago (a simulated day sent in a minute, an agent's spool after an outage) tell
where their nodes were then, not that they are silent now. A tick is judged no later than each
input's frontier (`schemas.runtime.frontier`): the history's own time while it arrives, the
clock for a fleet reporting as it goes.

Records are folded in their partition's order but for telemetry that later records overtake
(a heartbeat queued behind an XID of its partition, `streams.faust.lanes`): until such a record is
folded, its partition is judged no later than its time, and folding it never moves the
partition's position back.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import NamedTuple

from schemas.runtime.frontier import Frontier, reached

# (topic, partition) → the next offset to read: the end as last fetched (None: not fetched yet),
# or where reading started; each raises when it cannot answer (the partition is not held here).
Offsets = Callable[[str, int], int | None]


class Fetched(NamedTuple):
    """Where the consumer's last fetch left a partition, as one snapshot."""

    last_offset: int | None  # of the last record handed over since the last seek (None: none)
    position: int  # the next offset it reads: past markers and aborted records


# (topic, partition) → the partition's last fetch (None: none since the last seek); may raise.
Fetches = Callable[[str, int], Fetched | None]


class ReadPositions:
    def __init__(self) -> None:
        self._folded: dict[tuple[str, int], tuple[int, float]] = {}
        # Per partition, its overtaken records not folded yet: (offset, time), in offset order.
        self._overtaken: dict[tuple[str, int], deque[tuple[int, float | None]]] = {}
        self._reached: dict[tuple[str, int], Frontier] = {}  # per partition, how far it reached

    def overtaken(self, topic: str, partition: int, offset: int, timestamp_s: float | None) -> None:
        """A record of `topic`/`partition` that later records of it may be folded before; told
        in offset order, and each is then folded in that order (one lane keeps them)."""
        known = timestamp_s is not None and timestamp_s >= 0
        self._overtaken.setdefault((topic, partition), deque()).append(
            (offset, timestamp_s if known else None)
        )

    def folded(self, topic: str, partition: int, offset: int, timestamp_s: float | None) -> None:
        """A record of `topic`/`partition` was folded (or dead-lettered: it is behind us too).
        A record without a time (-1 from an old producer) moves the offset, not the time."""
        key = (topic, partition)
        waiting = self._overtaken.get(key)
        if waiting and waiting[0][0] == offset:
            waiting.popleft()
            last = self._folded.get(key)
            if last is not None and last[0] > offset:
                return  # later records were folded first: read as far as they are
        if timestamp_s is None or timestamp_s < 0:
            timestamp_s = self._folded.get(key, (0, 0.0))[1]
        self._folded[key] = (offset, timestamp_s)

    def reached(
        self, topic: str, partition: int, event_s: float, timestamp_s: float | None
    ) -> None:
        """A record of `topic`/`partition` written at `timestamp_s`, whose newest event happened
        at `event_s` (epoch seconds both), is folded; an older event moves nothing (a late one,
        a spool), nor does a record without a time."""
        moved = reached(self._reached.get((topic, partition)), event_s, timestamp_s)
        if moved is not None:
            self._reached[(topic, partition)] = moved

    def forget(self) -> None:
        """After a rebalance: a partition held again is read from its committed offset."""
        self._folded.clear()
        self._overtaken.clear()
        self._reached.clear()

    def judged_at(
        self,
        topics: Iterable[str],
        partition: int,
        now_s: float,
        *,
        end: Offsets,
        start: Offsets,
        fetched: Fetches,
    ) -> float | None:
        """The time a tick sent at `now_s` may judge `partition` at; None: not yet."""
        judged = now_s
        for topic in topics:
            try:
                last_end = end(topic, partition)
                first = start(topic, partition)
                fetch = fetched(topic, partition)
            except Exception:  # not held here (or no consumer): nothing of it to wait for
                continue
            if last_end is None:
                return None  # held, but not fetched yet: how far behind is unknown
            frontier = self._reached.get((topic, partition))
            if frontier is not None:
                judged = min(judged, frontier.at(now_s))
            if fetch is not None and fetch.position >= last_end:
                # Fetched to the end: past its last record handed over there is nothing to fold.
                last_end = (first or 0) if fetch.last_offset is None else fetch.last_offset + 1
            folded = self._folded.get((topic, partition))
            if folded is None:
                if last_end > (first or 0):
                    return None  # behind, with nothing of it folded yet
                continue
            offset, timestamp_s = folded
            if offset + 1 < last_end:
                judged = min(judged, timestamp_s)
            waiting = self._overtaken.get((topic, partition))
            if waiting:
                waiting_s = waiting[0][1]
                if waiting_s is None:
                    return None  # a record of unknown time waits: how far back is unknown
                judged = min(judged, waiting_s)
        return judged


def commit_past_markers(
    fetched: Fetched | None, committed: int | None, *, acks_pending: bool, read_offset: int | None
) -> int | None:
    """Where to commit a partition whose log goes on past its last record with markers or
    aborted records only, once every record handed over is committed: the fetch position, as
    Java's consumer commits (its lag then reads 0, not 1 for good). None: nothing to commit.

    `read_offset` is where the worker last read; a fetch with no record handed over since the
    seek to `committed` (`last_offset` None) says so only while it still reads from there.
    """
    if fetched is None or committed is None or fetched.position <= committed or acks_pending:
        return None
    if fetched.last_offset is None:
        return fetched.position if read_offset == committed else None
    return fetched.position if committed == fetched.last_offset + 1 else None
