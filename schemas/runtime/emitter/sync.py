"""A blocking face on the Emitter for code that is not asyncio (training scripts, shell tools)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

from schemas.envelope import Event
from schemas.runtime.emitter.core import Emitter
from schemas.runtime.emitter.settings import EmitterSettings
from schemas.runtime.settings import KafkaSettings

T = TypeVar("T")


class SyncEmitter:
    """`with SyncEmitter() as e: e.emit(event)`; its event loop runs in a daemon thread."""

    def __init__(
        self,
        settings: KafkaSettings | None = None,
        options: EmitterSettings | None = None,
        *,
        drain_timeout_s: float = 5.0,
    ) -> None:
        """`drain_timeout_s`: how long closing waits for Kafka to take what is spooled (what it
        does not take stays on disk for the next run); a script that must exit at once sets 0."""
        self._drain_timeout_s = drain_timeout_s
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._settings, self._options = settings, options
        self._emitter: Emitter | None = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def start(self) -> None:
        self._thread.start()
        self._emitter = self._run(self._make())
        self._run(self._emitter.start())

    async def _make(self) -> Emitter:
        return Emitter(self._settings, self._options)  # its asyncio objects bind to this loop

    def emit(self, event: Event) -> None:
        self._run(self._require().emit(event))

    def emit_batch(self, events: Sequence[Event]) -> None:
        self._run(self._require().emit_batch(events))

    def flush(self) -> None:
        self._run(self._require().flush())

    def close(self) -> None:
        if self._emitter is not None:
            self._run(self._emitter.stop(self._drain_timeout_s))
            self._emitter = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def _require(self) -> Emitter:
        if self._emitter is None:
            raise RuntimeError("SyncEmitter is not started: use `with SyncEmitter() as e:`")
        return self._emitter

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()
