"""The streams worker's commit, as one unit (docs/commit-protocol.md).

Faust commits on its timer (`CENTRALITY_STREAMS_COMMIT_INTERVAL_S`), at a rebalance and at stop:
`Consumer.force_commit` → `_commit_tps` → `_commit_offsets`. Our overrides of those steps call
the two functions here, so the whole protocol reads in order in this one docstring:

1. **Which partitions** (`_Consumer._filter_tps_with_pending_acks`): those with records
   acknowledged since the last commit, and those whose log ends in transaction markers.
2. **Which offsets** (`committable`): per partition, the offset below which every record handed
   to an agent is acknowledged (Faust's `_acked` gaps: the lanes fold records out of fetch
   order, and a record still queued or still in a fold holds the commit back), or past the
   markers (`read_positions.commit_past_markers`). Never a changelog's.
3. **Make what those records caused durable** (`flush_before_commit`, the producer's flush,
   which Faust's `_commit_offsets` awaits before it commits):
   a. the states held while records were folded together are written, and the table writes
      waiting for their forwards and statuses are made (`WriteBehind.settle`); a forward or
      status refused for good raises here;
   b. every changelog record put before now is handed to aiokafka (`_Buffer.drain`);
   c. aiokafka answers every record handed to it (its flush);
   d. a changelog record the broker refused raises `ChangelogUndelivered`.
   Any raise fails the commit: nothing is committed past a state the changelog lacks, and the
   worker stops, its stores distrusted (`clean_start.distrust`), for its successor to restore.
4. **Commit** the offsets of step 2 that this worker still owns (Faust's `_commit_offsets`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol


class ChangelogUndelivered(RuntimeError):
    """A table change the changelog does not have: nothing may be committed past it."""


class Settles(Protocol):
    async def settle(self) -> None: ...


class Drains(Protocol):
    async def drain(self) -> None: ...

    def refused(self) -> BaseException | None: ...


def committable(
    acked: dict[Any, int], tps: Iterable[Any], past_markers: Callable[[Any], int | None]
) -> dict[Any, int]:
    """Step 2: Faust's offsets (`acked`), and past the markers where Faust has none."""
    offsets = dict(acked)
    for tp in tps:
        if tp not in offsets and (past := past_markers(tp)) is not None:
            offsets[tp] = past
    return offsets


async def flush_before_commit(
    writes: Settles | None, buffer: Drains, flush_aiokafka: Callable[[], Awaitable[None]]
) -> None:
    """Step 3, a to d."""
    if writes is not None:
        await writes.settle()
    await buffer.drain()
    await flush_aiokafka()
    if (refused := buffer.refused()) is not None:
        raise ChangelogUndelivered(f"a changelog record was refused: {refused!r}")
