"""Python's cyclic garbage collector, set for processes that hold many objects for seconds or
longer (a worker's states, a replay's brain) and make many more that die young.

With Python's thresholds (700, 10, 10) the collector walks the young objects every 700
allocations, and the whole heap whenever a quarter of it arrived since the last full pass. In
the streams worker every state it folds lives until the node's or job's next event replaces it
(seconds at 10,000 nodes), so it outlives two young passes and counts as old: a quarter of the
heap was new every ~1.2 s, and the whole heap was walked that often. Collections took ~15 % of
the worker's CPU there (`bench scale --nodes 10000`, gc callbacks over the run), ~7 % in
`bench streams`, while they freed almost nothing: ~160 objects in a whole `bench streams` run,
~2,100 in a 10,000-node run (docs/benchmarks/streams.md). Nearly all of the worker's garbage
is freed by reference counting the moment it is dropped; the collector is only for cycles.

Bounds that hold with the worker's thresholds (`THRESHOLDS`): the young objects are walked once
50,000 more were made than freed, so garbage cycles wait at most for that many allocations
(the worker's live young objects stayed under ~25,000 at 10,000 nodes, so a young pass is
rare and costs ~40 ms); a full pass follows every 200 young passes; and the worker forces a
full pass on its heap upkeep timer (`CENTRALITY_STREAMS_HEAP_TRIM_INTERVAL_S`), so a cycle that
grew old is freed within that interval whatever the load.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from pydantic import Field

Thresholds = tuple[
    Annotated[int, Field(ge=0)], Annotated[int, Field(ge=0)], Annotated[int, Field(ge=0)]
]

# The streams worker's: young passes only past 50,000 net allocations, a full pass every 200.
THRESHOLDS: tuple[int, int, int] = (50_000, 20, 10)


def thresholds_setting(default: tuple[int, int, int], why: str) -> Any:
    """The setting of a process's collector thresholds (`gc.set_threshold`'s three numbers);
    `why` says what the default is set for."""
    return Field(
        default=default,
        description="Python's cyclic garbage collector thresholds, as a JSON list of three "
        "(`gc.set_threshold`: net allocations between young passes, young passes between "
        f"middle ones, middle passes between full ones; 0 first turns automatic passes off). {why} "
        "Python's own are [700, 10, 10].",
    )


def tune(thresholds: tuple[int, int, int]) -> None:
    """Everything the process made so far (modules, schemas, start-up state) frozen out of the
    collector's sight, and `thresholds` set. For a process's whole life."""
    gc.freeze()
    gc.set_threshold(*thresholds)


@contextmanager
def tuned(thresholds: tuple[int, int, int]) -> Iterator[None]:
    """`tune` for a stretch of work; the collector as it was afterwards."""
    before = gc.get_threshold()
    tune(thresholds)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
