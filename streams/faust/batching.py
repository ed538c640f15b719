"""An agent's records, handed to the app together while more of them are queued.

Faust hands an agent one record at a time, and each record cost its own fold, view, state
document, table write and changelog record, and the stream's own steps between them: ~400 µs of
the worker's CPU a record in `bench streams`, where the pure fold of the same events is a fifth
of that. Behind a backlog (a restart, a burst, a storm of bad records) a node's heartbeats and
samples queue by the dozen: the agent holds each record it is handed while more are queued, up
to `CENTRALITY_STREAMS_FOLD_RECORDS_MAX`, and hands them over together
(`StreamsApp.handle_records`, which folds each entity once for all of them). At real time the
queue is empty after nearly every record, and a record is handed over alone, as before.

- A held record is not acknowledged until the app is done with it (the stream's own
  acknowledgements are off), so no commit passes it (docs/commit-protocol.md, step 2).
- Records are handed over before the agent waits for another (the queue's `idle` hook,
  `streams.faust.lanes.LanedQueue.get`): none waits in hand for a record that is not there,
  for a rebalance, or for the stream to skip records of an older generation.
- Faust's tables read and write the partition of the stream's current event, which is the
  stream's last record, not the one a table write belongs to: the app names the record it
  works for (`acting_for`).
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from faust.streams import _current_event

from streams.faust.lanes import LanedQueue

Records = Callable[[Sequence[Any]], Awaitable[None]]  # Faust events, in the order handed over


async def in_batches(
    stream: Any, handle: Records, records_max: int, idle: Callable[[], None] = lambda: None
) -> None:
    """Iterate `stream`, handing its records to `handle` together while more are queued;
    `idle()` once they are handled and none is left."""
    queue = stream.channel.queue
    if not isinstance(queue, LanedQueue):  # without the hook, held records would wait for more
        raise TypeError(f"an agent of the streams app reads a LanedQueue, not {type(queue)}")
    held: list[Any] = []

    async def hand_over() -> None:
        if not held:
            return
        batch = held.copy()
        held.clear()
        await handle(batch)
        for event in batch:  # only once handled: a stop or crash in between commits none
            await stream.ack(event)

    async def when_idle() -> None:
        await hand_over()
        idle()

    stream.enable_acks = False
    queue.idle = when_idle
    async for event in stream.events():
        held.append(event)
        if len(held) >= records_max:
            await hand_over()


@contextmanager
def acting_for(event: Any) -> Iterator[None]:
    """Faust's table reads and writes within go to `event`'s partition (its current event);
    None leaves the current event as it is."""
    if event is None:
        yield
        return
    token = _current_event.set(weakref.ref(event))
    try:
        yield
    finally:
        _current_event.reset(token)
