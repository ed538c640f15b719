"""The interface every scheduler adapter implements, and the registry that names them."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol, TypeVar


class SchedulerAdapter(Protocol):
    name: str

    def requeue(self, job_id: str, *, checkpoint_uri: str | None) -> dict[str, Any]:
        """Run the job again, resuming from `checkpoint_uri`; returns what was done."""
        ...


A = TypeVar("A", bound=Callable[[], SchedulerAdapter])

_ADAPTERS: dict[str, Callable[[], SchedulerAdapter]] = {}

# Adapters live in their own modules; importing one registers it.
_MODULES = {"memory": "actions.adapters.memory"}


def adapter(name: str) -> Callable[[A], A]:
    def register(factory: A) -> A:
        _ADAPTERS[name] = factory
        return factory

    return register


def make_adapter(name: str) -> SchedulerAdapter:
    if name not in _ADAPTERS and name in _MODULES:
        importlib.import_module(_MODULES[name])
    try:
        return _ADAPTERS[name]()
    except KeyError:
        raise ValueError(f"unknown scheduler adapter {name!r}; known: {sorted(_MODULES)}") from None
