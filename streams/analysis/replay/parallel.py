"""Re-deciding a range of ClickHouse history on several processes, one part of the brain each.

A part (`streams.brain.parts`) reads its own nodes' events and everything every part folds, decides
them, and hands its triggers back: a fleet's telemetry, nearly all of a day, is split between
the processes, so a replay uses every core. What the parts decide is what the whole brain
decides; where a rule makes that untrue (`NotSplittable`), the range is decided whole, in this
process, instead.
"""

from __future__ import annotations

import multiprocessing
import pickle
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from multiprocessing.connection import Connection, wait
from typing import Any

import structlog

from schemas.codec import decode, encode
from schemas.envelope import Event
from schemas.events import Trigger
from schemas.runtime import collector
from streams.analysis.replay.clickhouse_source import ClickHouseSource
from streams.analysis.replay.rerun import current_brain, rerun_stream
from streams.brain.parts import NotSplittable, Part, PartBrain, split_types
from streams.brain.process import Brain
from streams.settings import StreamsSettings

log = structlog.get_logger(__name__)

# A replay allocates a few objects per event that die young, and holds a brain that lives long:
# the collector's default gen-0 threshold (700) made it walk the young objects every ~100 events
# and the whole heap often (`BENCHMARKS.md`: ~8 % of a replay). The brain is frozen out of
# the collector's sight first, and collections are rarer; state is still collected
# (`schemas.runtime.collector`).
GC_THRESHOLDS = (100_000, 50, 100)
PROGRESS_EVERY = 10_000  # events of a part between two reports of its event time
PROGRESS_S = 0.25


@dataclass(frozen=True)
class Rerun:
    """The range re-decided: triggers now and then (the range's, warm-up left out), how many
    events were folded (warm-up included, each once however many parts read it) and of them in
    the warm-up, and the seconds spent reading (query and decoding) and in all, summed over the
    parts; `warmup_decided`: what the warm-up decided (dropped), by id, with its time."""

    decided: list[Trigger]
    recorded: list[Trigger]
    events: int
    warmup_events: int
    parts: int
    read_s: float
    busy_s: float
    warmup_decided: dict[str, datetime] = field(default_factory=dict)


Progress = Callable[[float], None]  # the share of the range's event time (warm-up in) done


def rerun_parts(
    source: ClickHouseSource,
    warmup_s: float,
    parts: int,
    settings: StreamsSettings | None = None,
    on_progress: Progress | None = None,
) -> Rerun:
    """Re-decide `source`'s range with the current rules on `parts` processes (1: in this one;
    a job's or a node's story, small and read in one query, always). `on_progress` hears, now
    and then, how far in event time the slowest part is, as a share of the range."""
    settings = settings or StreamsSettings()
    share = _EventTimeShare(source.scope.since.timestamp() - warmup_s, source.scope.until)
    if parts > 1 and source.scope.job is None and source.scope.node is None:
        try:
            return _in_processes(source, warmup_s, parts, settings, share, on_progress)
        except NotSplittable as exc:
            log.warning("replay decided whole: the rules do not split by node", reason=str(exc))
    reached = None if on_progress is None else lambda at: on_progress(share(at))
    with collector.tuned(GC_THRESHOLDS):
        whole = _rerun(source, warmup_s, None, settings, reached)
    return Rerun(
        whole.decided,
        whole.recorded,
        whole.count,
        whole.warmup,
        1,
        whole.read_s,
        whole.busy_s,
        whole.warmup_decided,
    )


@dataclass(frozen=True)
class _Done:
    count: int
    warmup: int
    read_s: float
    busy_s: float
    decided: list[Trigger]
    recorded: list[Trigger]
    warmup_decided: dict[str, datetime]


@dataclass(frozen=True)
class _EventTimeShare:
    start_s: float
    until: datetime

    def __call__(self, at_s: float) -> float:
        span_s = self.until.timestamp() - self.start_s
        return min(max((at_s - self.start_s) / span_s, 0.0), 1.0) if span_s > 0 else 1.0


def _rerun(
    source: ClickHouseSource,
    warmup_s: float,
    part: Part | None,
    settings: StreamsSettings,
    reached: Callable[[float], None] | None = None,
) -> _Done:
    started = time.perf_counter()
    streamed = source.stream(warmup_s, part)
    engine = current_brain(settings).engine
    brain = Brain(engine) if part is None else PartBrain(engine, part)
    read = _Read(streamed.facts, part, streamed.since, reached)
    dropped: dict[str, datetime] = {}
    decided = rerun_stream(
        read, brain, settings.tick_interval_s, start=streamed.since, warmup_decided=dropped
    )
    busy_s = time.perf_counter() - started
    return _Done(read.count, read.warmup, read.spent_s, busy_s, decided, streamed.recorded, dropped)


class _Read:
    """Events passed on, timed, counting those the part is the one to count (its split types'
    events and, in the first part, every other, which every part reads), and of them those
    before `since`."""

    def __init__(
        self,
        events: Iterator[Event],
        part: Part | None,
        since: datetime,
        reached: Callable[[float], None] | None,
    ) -> None:
        self._events = events
        self._reached = reached
        self._every = part is None or part.index == 0
        self._split = frozenset(split_types())
        self._since = since
        self.count = 0
        self.warmup = 0
        self.spent_s = 0.0

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        started = time.perf_counter()
        try:
            event = next(self._events)
        finally:
            self.spent_s += time.perf_counter() - started
        if self._every or event.type in self._split:
            self.count += 1
            self.warmup += event.occurred_at < self._since
            if self._reached is not None and self.count % PROGRESS_EVERY == 0:
                self._reached(event.occurred_at.timestamp())  # seconds since the epoch
        return event


def _in_processes(
    source: ClickHouseSource,
    warmup_s: float,
    parts: int,
    settings: StreamsSettings,
    share: _EventTimeShare,
    on_progress: Progress | None,
) -> Rerun:
    # Forked, not spawned: a child starts with the rules and schemas already imported (a spawned
    # one imports them again, a second or more, as long as a small replay takes).
    context = multiprocessing.get_context("fork")
    reached = context.RawArray("d", [share.start_s] * parts)  # each part's event time
    pipes, workers = [], []
    for index in range(parts):
        receive, send = context.Pipe(duplex=False)
        worker = context.Process(
            target=_part_worker,
            args=(source, warmup_s, Part(index, parts), settings, reached, send),
            name=f"replay-part-{index}",
            daemon=True,
        )
        worker.start()
        send.close()
        pipes.append(receive)
        workers.append(worker)
    done: dict[int, _Done] = {}
    try:
        while len(done) < parts:
            ready = wait([p for i, p in enumerate(pipes) if i not in done], PROGRESS_S)
            for index in [i for i, p in enumerate(pipes) if p in ready]:
                done[index] = _result_of(pipes[index], workers[index])
                reached[index] = share.until.timestamp()
            if on_progress is not None:
                on_progress(share(min(reached)))
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.kill()
            worker.join()
    results = [done[i] for i in range(parts)]
    return Rerun(
        [t for r in results for t in r.decided],
        [t for r in results for t in r.recorded],
        sum(r.count for r in results),
        sum(r.warmup for r in results),
        parts,
        sum(r.read_s for r in results),
        sum(r.busy_s for r in results),
        {tid: at for r in results for tid, at in r.warmup_decided.items()},
    )


def _result_of(pipe: Connection, worker: Any) -> _Done:
    try:
        outcome, *rest = pipe.recv()
    except EOFError:
        worker.join()
        exit_code = worker.exitcode
        raise RuntimeError(f"{worker.name} ended without a result (exit {exit_code})") from None
    if outcome == "not-splittable":
        raise NotSplittable(rest[0])
    if outcome == "failed":
        failure, where = rest
        # The part's own exception, so callers tell a refused connection from a bug as they
        # would in one process; its traceback, which did not cross, as its cause.
        raise failure from RuntimeError(f"{worker.name} failed:\n{where}")
    count, warmup, read_s, busy_s, decided, recorded, dropped = rest
    return _Done(
        count,
        warmup,
        read_s,
        busy_s,
        _decoded(decided),
        _decoded(recorded),
        {tid: datetime.fromtimestamp(at_s, UTC) for tid, at_s in dropped},
    )


def _part_worker(
    source: ClickHouseSource,
    warmup_s: float,
    part: Part,
    settings: StreamsSettings,
    reached: Any,
    send: Connection,
) -> None:
    try:
        with collector.tuned(GC_THRESHOLDS):
            done = _rerun(
                source, warmup_s, part, settings, partial(reached.__setitem__, part.index)
            )
        # As the wire's bytes: a trigger pickles slower than it encodes and decodes.
        decided = [encode(t) for t in done.decided]
        recorded = [encode(t) for t in done.recorded]
        dropped = [(tid, at.timestamp()) for tid, at in done.warmup_decided.items()]
        send.send(
            ("done", done.count, done.warmup, done.read_s, done.busy_s, decided, recorded, dropped)
        )
    except NotSplittable as exc:
        send.send(("not-splittable", str(exc)))
    except BaseException as exc:  # whatever ends the part is the caller's to report
        where = traceback.format_exc()
        try:
            send.send(("failed", exc, where))
        except (pickle.PicklingError, TypeError, AttributeError):  # an exception that cannot cross
            send.send(("failed", RuntimeError(f"{type(exc).__name__}: {exc}"), where))
    finally:
        send.close()


def _decoded(messages: list[bytes]) -> list[Trigger]:
    triggers = [event for message in messages for event in decode(message)]
    assert all(isinstance(t, Trigger) for t in triggers)
    return triggers  # type: ignore[return-value]
