"""Decoded entity states of the partitions this worker owns, so a message does not pay for
re-validating its entity's JSON from the table on every read.

Only the owner of a partition writes its keys, so the cache stays exact while ownership lasts;
it is dropped on every rebalance (then the table, restored from its changelog, is the truth).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any


class StateCache:
    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._states: OrderedDict[tuple[str, str], Any] = OrderedDict()

    def get(self, table: str, key: str) -> Any | None:
        state = self._states.get((table, key))
        if state is not None:
            self._states.move_to_end((table, key))
        return state

    def put(self, table: str, key: str, state: Any) -> None:
        self._states[(table, key)] = state
        self._states.move_to_end((table, key))
        while len(self._states) > self.max_entries:
            self._states.popitem(last=False)

    def drop(self, table: str, key: str) -> None:
        self._states.pop((table, key), None)

    def clear(self) -> None:
        self._states.clear()
