"""Where collectors send events: the Emitter, or a recording sink in tests and dry runs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from types import TracebackType
from typing import Protocol, Self, TypeVar

from schemas.envelope import Event

E = TypeVar("E", bound=Event)


class EventSink(Protocol):
    """What a collector needs of the Emitter; `schemas.runtime.emitter.Emitter` satisfies it."""

    async def emit(self, event: Event) -> None: ...

    async def emit_batch(self, events: Sequence[Event]) -> None: ...


class RecordingSink:
    """Counts what was sent, per type and per message; keeps the events only if asked to.

    Dry runs (`--dry-run`) count without keeping, so memory stays flat however long they run.
    """

    def __init__(self, *, keep: bool = True) -> None:
        self.keep = keep
        self.events: list[Event] = []
        self.batches: list[tuple[Event, ...]] = []
        self.by_type: Counter[str] = Counter()
        self.messages = 0

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    async def emit(self, event: Event) -> None:
        await self.emit_batch((event,))

    async def emit_batch(self, events: Sequence[Event]) -> None:
        if not events:
            raise ValueError("a batch needs at least one event")
        if len({e.subject for e in events}) != 1:
            raise ValueError("a batch carries events of one subject only")
        self.messages += 1
        self.by_type.update(e.type for e in events)
        if self.keep:
            self.events.extend(events)
            self.batches.append(tuple(events))

    def of_type(self, cls: type[E]) -> list[E]:
        return [e for e in self.events if isinstance(e, cls)]
