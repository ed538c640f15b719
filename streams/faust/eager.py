"""Run a coroutine's first step inline, and only make a task of it if it has to wait.

Python 3.11 has no eager tasks (3.12's `eager_task_factory`): wrapping a coroutine in a task
costs a task and a loop iteration even when the coroutine never waits. `start` steps it by
hand; a coroutine that finishes in that step is done, one that suspends is handed back as a
coroutine that continues exactly where it stopped (awaitable by a task, cancellable as usual).
"""

from __future__ import annotations

import types
from collections.abc import Coroutine, Generator
from typing import Any


class Finished:
    """The coroutine completed during its first step."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def start(coro: Coroutine[Any, Any, Any]) -> Finished | Coroutine[Any, Any, Any]:
    """`Finished(result)`, or a coroutine that resumes `coro` after its first suspension.

    An exception raised in the first step propagates, as `await coro` would raise it.
    """
    try:
        pending = coro.send(None)
    except StopIteration as done:
        return Finished(done.value)
    return _finish(coro, pending)


async def _finish(coro: Coroutine[Any, Any, Any], pending: Any) -> Any:
    return await _resumed(coro, pending)


@types.coroutine
def _resumed(coro: Coroutine[Any, Any, Any], pending: Any) -> Generator[Any, None, Any]:
    # Hand the future `coro` is blocked on to the awaiting task; once the task wakes us,
    # `yield from` resumes `coro` and delegates everything after (sends, throws, close).
    while True:
        try:
            yield pending
        except BaseException as exc:  # cancellation (or anything thrown in) goes to `coro`
            try:
                pending = coro.throw(exc)
            except StopIteration as done:
                return done.value
            continue
        return (yield from coro)
