"""Blocking calls (adapters, Slack) in threads of their own, so a hung one costs only itself.

`asyncio.to_thread` would share the loop's default pool: a few hung adapter calls would use up
its threads, and `asyncio.run` waits for that pool at exit, so a hung call would also keep the
process from stopping. A daemon thread per call has neither problem; calls are few (one per
action attempt or notification), so a thread each is cheap.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def in_thread(fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
    """Start `fn(*args)` in a daemon thread; the future ends when the call does."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()  # log and trace context follow the call

    def settle(result: T | None, exc: BaseException | None) -> None:
        if future.done():
            return
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = context.run(fn, *args)
        except BaseException as exc:  # handed to the awaiting side, which decides
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=run, name=f"call-{getattr(fn, '__name__', 'fn')}", daemon=True).start()
    return future
