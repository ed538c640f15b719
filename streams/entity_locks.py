"""One entity folded at a time: two agents write the `nodes` table (telemetry has an agent of its
own, so a fatal XID never waits behind a fleet's GPU samples; see `streams.app`). A fold that
sends outputs awaits between reading the state and writing it; without a lock per entity the
other agent could fold the same node meanwhile, and one of the two writes would lose the
other's change.

A lock lives only while someone holds or waits for it: a fleet's worth of idle locks would be
memory for nothing, and most folds never wait (nothing else is folding that entity)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class EntityLocks:
    def __init__(self) -> None:
        self._locks: dict[tuple[str, str], tuple[asyncio.Lock, list[int]]] = {}

    @contextlib.asynccontextmanager
    async def holding(self, table: str, key: str) -> AsyncIterator[None]:
        slot = (table, key)
        entry = self._locks.get(slot)
        if entry is None:
            entry = self._locks[slot] = (asyncio.Lock(), [0])
        lock, users = entry
        users[0] += 1  # counted before waiting: a waiter keeps the lock alive for itself
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[slot]

    def __len__(self) -> int:
        return len(self._locks)
