"""NCCL Inspector's records (`ext-profiler/inspector` of NVIDIA/nccl, `NCCL_INSPECTOR_ENABLE=1`),
read from the JSON lines it writes per process, and summarised per job, communicator and interval.

A record is one collective on one rank: `{"header": {"id", "rank", "n_ranks", "nnodes"},
"metadata": {"hostname", …}, "coll_perf": {"coll", "coll_sn", "coll_msg_size_bytes",
"coll_exec_time_us", "coll_timing_source", "coll_busbw_gbs", …}}`. Point-to-point records
(`p2p_perf`) are not read: their peer is a rank number, which no event here can resolve to a host.

A host runs many ranks of one communicator (a GPU each). It is waited for when its latest rank
is: so its summary keeps, of its ranks' median times, the shortest (`schemas.events.collectives`).
Memory is bounded: the newest `TIMES_KEPT` times per rank and key, and `KEYS_KEPT` keys.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field
from typing import Any, cast, get_args

import orjson

from schemas.events.collectives import EXEC_US_MAX, CollectivesTimedPayload, Timing

TIMES_KEPT = 256
KEYS_KEPT = 4096
_TIMINGS = frozenset(get_args(Timing))


@dataclass(frozen=True)
class CollectiveRecord:
    communicator: str
    rank: int
    comm_ranks: int
    comm_nodes: int
    collective: str
    size_bytes: int
    exec_us: float
    busbw_gbs: float | None
    timing: Timing


def read_record(line: str) -> CollectiveRecord | None:
    """One Inspector line's collective; None for any other line, a point-to-point record or a
    record missing what the summary needs."""
    if not line.startswith('{"header"'):  # most lines of a log: one look, no copy
        return None
    try:
        doc = orjson.loads(line)
        header, perf = doc["header"], doc["coll_perf"]
        return _record(header, perf)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def _record(header: dict[str, Any], perf: dict[str, Any]) -> CollectiveRecord | None:
    exec_us = float(perf["coll_exec_time_us"])
    if not 0 <= exec_us <= EXEC_US_MAX:
        return None
    busbw = perf.get("coll_busbw_gbs")
    timing = perf.get("coll_timing_source")
    return CollectiveRecord(
        communicator=str(header["id"]),
        rank=_count(header["rank"], 0),
        comm_ranks=_count(header["n_ranks"], 1),
        comm_nodes=_count(header["nnodes"], 1),
        collective=str(perf["coll"]),
        size_bytes=_count(perf["coll_msg_size_bytes"], 0),
        exec_us=exec_us,
        busbw_gbs=float(busbw) if isinstance(busbw, int | float) and busbw >= 0 else None,
        timing=cast(Timing, timing) if timing in _TIMINGS else "other",
    )


def _count(value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(value)
    return value


Key = tuple[str, str, str, int]  # the job, the communicator, the collective, the message size


@dataclass
class _Pending:
    first: CollectiveRecord
    times: dict[int, deque[float]] = field(default_factory=dict)  # per rank
    busbw: deque[float] = field(default_factory=lambda: deque(maxlen=TIMES_KEPT))
    count: int = 0


class CollectiveSummaries:
    """What the tailer read of a job's collectives, until it sends their summary."""

    def __init__(self, node: str) -> None:
        self.node = node
        self._pending: dict[Key, _Pending] = {}

    def add(self, job: str, r: CollectiveRecord) -> None:
        key = (job, r.communicator, r.collective, r.size_bytes)
        pending = self._pending.get(key)
        if pending is None:
            if len(self._pending) >= KEYS_KEPT:
                return  # more communicators than a job has: the interval's first ones stand
            pending = self._pending[key] = _Pending(r)
        pending.times.setdefault(r.rank, deque(maxlen=TIMES_KEPT)).append(r.exec_us)
        if r.busbw_gbs is not None:
            pending.busbw.append(r.busbw_gbs)
        pending.count += 1

    def ready(self, job: str | None = None) -> list[tuple[Key, CollectivesTimedPayload]]:
        """A summary per key of what is pending (of `job` alone if given)."""
        return [
            (key, self._summary(pending))
            for key, pending in self._pending.items()
            if job is None or key[0] == job
        ]

    def forget(self, key: Key) -> None:
        self._pending.pop(key, None)

    def _summary(self, p: _Pending) -> CollectivesTimedPayload:
        r = p.first
        return CollectivesTimedPayload(
            node=self.node,
            communicator=r.communicator,
            collective=r.collective,
            size_bytes=r.size_bytes,
            comm_ranks=r.comm_ranks,
            comm_nodes=r.comm_nodes,
            ranks=len(p.times),
            count=p.count,
            exec_us=min(statistics.median(times) for times in p.times.values()),
            busbw_gbs=statistics.median(p.busbw) if p.busbw else None,
            timing=r.timing,
        )
