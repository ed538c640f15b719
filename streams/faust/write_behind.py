"""Table writes behind their message's forwards and status records, without holding the agent.

A fold's new state is written to its table (and so to the changelog) only once the outputs it
sent are acknowledged: a stored state never claims a decision, forward or view that was not
delivered. Triggers are awaited in the fold, as a failed decision fails its message
(`streams.faust.app`). Status records (what `centrality nodes` reads) change with nearly every new
node and job, and a job's start forwards it to each of its nodes: awaiting each message's
acknowledgements before the next message cost a produce round trip per message, 6 ms on
average at 5,000 nodes on the 2-core VM, 61 s of a 70 s run (`bench scale`, BENCHMARKS.md),
while the fatal XIDs and job failures queued behind waited. So the agent goes on at once, and
the state waits here:

- the agent reads the state it just folded (`pending`) until it is written;
- writes happen in fold order, each once every record its fold sent is acknowledged, in the
  fold's own context (Faust's table takes the changelog partition from the current event);
- a record that fails is sent again (`call_retrying`: transient failures, for `send_retry_s`);
  one that still fails is `failed`: nothing after it is written, the local stores are
  distrusted and the flush before the next commit raises, so the worker stops before
  committing past it. The next start restores the tables from the changelog, which lacks these
  states, and folds the uncommitted messages again (same ids). Forwards and statuses are the
  app's own hand-overs and view, as its changelog records are, and fail the same way
  (`streams.faust.transport`, fix 11), not as a message's failure;
- `settle`, called by the producer's flush before every commit, rebalance and stop, returns
  once every write queued before it is done: a commit never covers a message whose state is
  still waiting here.

Behind a backlog, while the agents fold records together (`streams.faust.batching`), a state
whose records are acknowledged is **held** (`holding`) rather than written: a later state of the
same entity replaces it, so a node folded in batch after batch is written once, not once a
batch (each write is a RocksDB put and a changelog record: 10 % of the worker's CPU in `bench
streams`). Held states are written when an agent has nothing left to fold (`release`), when
`held_max` of them are held (the one folded first), before any state that is not held, and in
`settle`, so before every commit: the changelog still has the states in fold order, less those
replaced.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from streams.faust import clean_start
from streams.faust.failures import call_retrying

log = structlog.get_logger("streams")

Resend = Callable[[], Awaitable[Any]]  # sends the same record again, until acknowledged


class OutputUndelivered(RuntimeError):
    """A forward or status record still refused after its retries: no commit may pass its
    message."""


@dataclass
class _Write:
    table: str
    key: str
    state: Any
    apply: Callable[[], None]
    sent: list[tuple[asyncio.Future[Any], Resend]]
    context: contextvars.Context = field(default_factory=contextvars.copy_context)
    retrying: set[int] = field(default_factory=set)


class WriteBehind:
    def __init__(self, retry_s: float, stopping: Callable[[], bool], held_max: int = 4096) -> None:
        self.retry_s = retry_s
        self.stopping = stopping
        self.held_max = held_max
        self.holding = 0  # how many agents are folding records together (held while any is)
        self.failed: BaseException | None = None
        self._held: dict[tuple[str, str], _Write] = {}  # in fold order (a replaced one leaves)
        self._queue: deque[_Write] = deque()
        self._latest: dict[tuple[str, str], _Write] = {}
        self._queued = 0  # writes ever queued
        self._done = 0  # of those, written
        self._progress = asyncio.Event()

    def pending(self, table: str, key: str) -> Any | None:
        """The last state folded for `key` and not written yet; None if there is none."""
        waiting = self._latest.get((table, key))
        return None if waiting is None else waiting.state

    def pending_keys(self, table: str) -> list[str]:
        return [key for t, key in self._latest if t == table]

    def write(
        self,
        table: str,
        key: str,
        state: Any,
        apply: Callable[[], None],
        sent: list[tuple[asyncio.Future[Any], Resend]],
    ) -> None:
        """Write `state` with `apply()` (in the caller's context) once every future in `sent`
        is acknowledged and every write queued before it is done; or, `holding`, hold it
        until `release` (a held state of the same key is replaced: never written)."""
        replaced = self._held.pop((table, key), None)
        if replaced is not None and self._latest.get((table, key)) is replaced:
            del self._latest[(table, key)]
        ready = not self._queue and all(_acknowledged(fut) for fut, _ in sent)
        if state is not None:
            if ready and self.holding:
                self._hold(_Write(table, key, state, apply, []))
                return
            self.release()  # states are written in fold order: those held before this first
        if ready:
            apply()
            return
        entry = _Write(table, key, state, apply, list(sent))
        self._queue.append(entry)
        if state is not None:
            self._latest[(table, key)] = entry
        self._queued += 1
        for fut, _ in sent:
            fut.add_done_callback(self._advance)
        self._advance()

    def after(self, sent: list[tuple[asyncio.Future[Any], Resend]]) -> None:
        """Records of a message that writes no state here (a fold that changed nothing, an
        event handed to the other agent): no commit passes the message before they land."""
        if sent:
            self.write("", "", None, _nothing, sent)

    def release(self) -> None:
        """Every held state written, in fold order, each in its fold's context."""
        while self._held and self.failed is None:
            self._apply_held(next(iter(self._held)))

    async def settle(self) -> None:
        """Until every write queued before this call is done; raises if one never can be."""
        self.release()
        target = self._queued
        while self._done < target:
            if self.failed is not None:
                raise OutputUndelivered(f"a record was refused: {self.failed!r}")
            self._progress.clear()
            await self._progress.wait()
        if self.failed is not None:
            raise OutputUndelivered(f"a record was refused: {self.failed!r}")

    def _advance(self, _: object = None) -> None:
        while self._queue and self.failed is None:
            head = self._queue[0]
            if not self._ready(head):
                break
            self._queue.popleft()
            try:
                head.context.run(head.apply)
            except Exception as exc:  # the table is gone (a stop): the changelog lacks it
                self._fail(exc)
                break
            if self._latest.get((head.table, head.key)) is head:
                del self._latest[(head.table, head.key)]
            self._done += 1
        self._progress.set()

    def _hold(self, entry: _Write) -> None:
        self._held[(entry.table, entry.key)] = self._latest[(entry.table, entry.key)] = entry
        if len(self._held) > self.held_max:
            self._apply_held(next(iter(self._held)))

    def _apply_held(self, held: tuple[str, str]) -> None:
        entry = self._held.pop(held)
        try:
            entry.context.run(entry.apply)
        except Exception as exc:  # the table is gone (a stop): the changelog lacks it
            self._fail(exc)
            return
        if self._latest.get(held) is entry:
            del self._latest[held]

    def _ready(self, entry: _Write) -> bool:
        """Whether every status of `entry` is acknowledged; sends a failed one again."""
        ready = True
        for i, (fut, resend) in enumerate(entry.sent):
            if not fut.done():
                ready = False
            elif not _acknowledged(fut):
                if i in entry.retrying:  # its retries are spent too
                    self._fail(_failure(fut))
                    return False
                entry.retrying.add(i)
                retry = asyncio.ensure_future(
                    call_retrying("output_send", resend, self.retry_s, self.stopping)
                )
                retry.add_done_callback(self._advance)
                entry.sent[i] = (retry, resend)
                ready = False
        return ready

    def _fail(self, exc: BaseException) -> None:
        if self.failed is None:
            log.error("output_undelivered", error=repr(exc), waiting=len(self._queue))
            clean_start.distrust()
            self.failed = exc
        self._progress.set()


def _nothing() -> None:
    """The write of a message that changed no state."""


def _acknowledged(fut: asyncio.Future[Any]) -> bool:
    return fut.done() and not fut.cancelled() and fut.exception() is None


def _failure(fut: asyncio.Future[Any]) -> BaseException:
    if fut.cancelled():
        return asyncio.CancelledError()
    exc = fut.exception()
    assert exc is not None  # only a future that failed comes here
    return exc
