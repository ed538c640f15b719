"""What went wrong, in one line a person can act on, and the exit code that goes with it.

Every command's exceptions end here (`centrality.entry`): an explainer registered for the
exception's type (or for one in its cause chain) turns it into a `Failure`. A user's mistake (a bad
time, value or id) exits 2; a service that cannot be reached, or is not ready, exits 1 and names
its address and what starts it. Anything unexplained is a bug: one line too, the traceback with
`--debug`.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

USAGE = 2  # the user asked for something that cannot be done as asked
UNAVAILABLE = 1  # something we depend on is not there or not ready
START_HINT = "start the local stack with `make up` (or `centrality up`)"


@dataclass(frozen=True)
class Failure:
    code: int
    problem: str
    fix: str = ""

    @property
    def line(self) -> str:
        return f"{self.problem}; {self.fix}" if self.fix else self.problem


class UserError(Exception):
    """A mistake the user can fix: what is wrong, then how to fix it."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}; {fix}")
        self.problem = problem
        self.fix = fix


E = TypeVar("E", bound=BaseException)
Explainer = Callable[[E], Failure | None]
_EXPLAINERS: dict[type[BaseException], Explainer[Any]] = {}


def explains(kind: type[E]) -> Callable[[Explainer[E]], Explainer[E]]:
    """Register the explainer of `kind` (and its subclasses); it may return None to pass."""

    def register(fn: Explainer[E]) -> Explainer[E]:
        _EXPLAINERS[kind] = fn
        return fn

    return register


# Explainers whose libraries cost start-up time: imported when an error is first explained (a
# base install has no ClickHouse client, and then nothing of it can have been raised either; the
# rule registry brings the whole contract).
_LATE = ("centrality.clickhouse_errors", "centrality.rule_errors")


def explain(exc: BaseException) -> Failure | None:
    """The first explanation found along the exception, its groups and its causes."""
    for module in _LATE:
        with contextlib.suppress(ModuleNotFoundError):
            importlib.import_module(module)
    for link in _chain(exc):
        for kind in type(link).__mro__:
            explainer = _EXPLAINERS.get(kind)
            found = explainer(link) if explainer else None
            if found is not None:
                return found
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo = [exc]
    while todo:
        link = todo.pop(0)
        if id(link) in seen:
            continue
        seen.add(id(link))
        yield link
        if isinstance(link, BaseExceptionGroup):
            todo.extend(link.exceptions)
        # Only what it was raised `from`: an implicit __context__ is what was being handled
        # when something else went wrong, not an explanation of it.
        if link.__cause__ is not None:
            todo.append(link.__cause__)


def one_line(text: str, width: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@explains(UserError)
def _user(exc: UserError) -> Failure:
    return Failure(USAGE, exc.problem, exc.fix)
