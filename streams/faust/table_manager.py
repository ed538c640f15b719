"""Faust's table manager, ready a second sooner (streams/faust/README.md).

Faust's `TableManager.on_start` sleeps a second before it registers the tables' changelogs, so
that a table made after the app (by an agent or a task as it starts) is registered with the rest.
Every table of ours is made by `streams.faust.topology.wire`, before the worker starts, and one
made later is refused loudly (`TableManager.add`: "Too late to add tables"). The second only
delayed every start of the worker: a restarted worker (after a crash, a deploy, a rebalance to a
new process) decided nothing for that long more. `streams.faust.canary` checks that Faust's
`on_start` still does what this one does, less the sleep.
"""

from __future__ import annotations

from faust.tables import TableManager as FaustTableManager


class TableManager(FaustTableManager):
    async def on_start(self) -> None:
        if not self.should_stop:
            await self._update_channels()
            await self.recovery.start()
