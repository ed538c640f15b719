"""Batches: quarantines drained a few at a time (a big job's suspects, `QuarantineBatch`).

A node of a batch is out from its drain until it was benchmarked, escalated or released,
and for `batch_hold_s` at most: a story that stalls (a benchmark that never ran) holds its batch
no longer. A quarantine whose batch is full waits in the worker for a member to come back,
its node still in service, reading the ledger again every `batch_poll_s`. While it waits it
does not count against the worker's concurrency, and its record is not committed: a worker
that stops (or loses the partition) leaves it to be delivered again, and the ledger says what
was done meanwhile.

Work of the same node queued behind a waiting quarantine (an operator's command) ends the wait:
the drain goes ahead and the later work follows, so nothing people do waits for a batch.

Across workers a batch is counted from the shared ledger, read again just before each drain is
admitted: two workers admitting a member in the same instant may put one more node out than
`most_out`. Within a worker, admitted drains count before their record is written.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager
from datetime import datetime, timedelta

import structlog

from actions.ledger import History
from schemas.events import QuarantineBatch, Trigger
from schemas.runtime.metrics.catalog import BATCH_WAITING

log = structlog.get_logger("actions.batches")

# The action names that end a node's turn in its batch, beside a release.
BENCHMARK, ESCALATE = "run_benchmark", "escalate_nodes"

# Enter it to wait without holding the worker's room; it gives whether work of the same subject
# is queued behind the waiting one.
Park = Callable[[], AbstractContextManager[Callable[[], bool]]]


@contextlib.contextmanager
def unparked() -> Iterator[Callable[[], bool]]:
    """Outside a worker (tests, one-off runs): nothing queues behind."""
    yield lambda: False


def batch_of(trigger: Trigger) -> QuarantineBatch | None:
    batch = getattr(trigger.payload, "batch", None)
    return batch if isinstance(batch, QuarantineBatch) else None


def out_in_batch(
    history: History, cluster: str, name: str, now: datetime, hold_s: float
) -> set[str]:
    """Nodes of `cluster` drained for batch `name` within `hold_s` whose turn has not ended."""
    since = now - timedelta(seconds=hold_s)
    ended: dict[str, datetime] = {}
    for action in (BENCHMARK, ESCALATE):
        for entry in history.acted(cluster, action):
            if entry.outcome == "succeeded" and entry.error is None:  # started: still testing
                for node in entry.nodes:
                    ended[node] = max(ended.get(node, entry.recorded_at), entry.recorded_at)
    out = set()
    for node, drained_at in history.drained(cluster).items():
        standing = history.standing(cluster, node)
        if standing is None or standing.batch != name or drained_at < since:
            continue
        if ended.get(node, since) <= drained_at:
            out.add(node)
    return out


class Batches:
    """Admits a batch's drains while it has room; one per dispatcher."""

    def __init__(
        self,
        history: Callable[[], History],
        refresh: Callable[[], Awaitable[None]],
        clock: Callable[[], datetime],
        hold_s: float,
        poll_s: float,
    ) -> None:
        self._history = history
        self._refresh = refresh
        self._clock = clock
        self.hold_s = hold_s
        self.poll_s = poll_s
        self._admitted: dict[tuple[str, str], set[str]] = {}  # (cluster, batch): not recorded yet

    @contextlib.contextmanager
    def admitted(self, trigger: Trigger) -> Iterator[None]:
        """While the admitted drain runs, its nodes count as out (before the ledger says so)."""
        batch = batch_of(trigger)
        if batch is None:
            yield
            return
        key, nodes = (trigger.cluster, batch.name), set(getattr(trigger.payload, "nodes", ()))
        self._admitted.setdefault(key, set()).update(nodes)
        try:
            yield
        finally:
            self._admitted[key] -= nodes
            if not self._admitted[key]:
                del self._admitted[key]

    def room(self, trigger: Trigger, batch: QuarantineBatch) -> tuple[bool, int]:
        """Whether the trigger's nodes may go out now, and how many of the batch are out."""
        out = out_in_batch(
            self._history(), trigger.cluster, batch.name, self._clock(), self.hold_s
        ) | self._admitted.get((trigger.cluster, batch.name), set())
        others = out - set(getattr(trigger.payload, "nodes", ()))
        return len(others) < batch.most_out, len(others)

    async def turn(self, trigger: Trigger, park: Park) -> None:
        """Return once the trigger's batch has room for it (at once without a batch)."""
        batch = batch_of(trigger)
        if batch is None:
            return
        await self._read()
        fits, out = self.room(trigger, batch)
        if fits:
            return
        log.info(
            "batch_full",
            batch=batch.name,
            out=out,
            most_out=batch.most_out,
            id=str(trigger.event_id),
        )
        with park() as queued_behind, BATCH_WAITING.track_inprogress():
            while not fits and not queued_behind():
                await asyncio.sleep(self.poll_s)
                await self._read()
                fits, out = self.room(trigger, batch)
        log.info("batch_turn", batch=batch.name, out=out, id=str(trigger.event_id), pushed=not fits)

    async def _read(self) -> None:
        try:
            await self._refresh()
        except Exception as exc:  # unread, the batch holds what this worker knows
            log.warning("ledger_refresh_failed", error=f"{type(exc).__name__}: {exc}")
