"""Handler registry: one decorated function per trigger type."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from actions.adapters.base import SchedulerAdapter
from schemas.events import Trigger

Handler = Callable[[Any, SchedulerAdapter], dict[str, Any]]
H = TypeVar("H", bound=Handler)


@dataclass(frozen=True)
class HandlerSpec:
    name: str
    trigger: type[Trigger]
    fn: Handler
    retries: int
    backoff_s: float


_HANDLERS: dict[type[Trigger], HandlerSpec] = {}


def handles(
    trigger: type[Trigger], *, name: str, retries: int = 3, backoff_s: float = 1.0
) -> Callable[[H], H]:
    """Register `fn(trigger, adapter) -> detail` for one trigger type; returns it unchanged."""

    def register(fn: H) -> H:
        if trigger in _HANDLERS and _HANDLERS[trigger].fn is not fn:
            raise ValueError(f"{trigger.__name__} already has a handler")
        _HANDLERS[trigger] = HandlerSpec(name, trigger, fn, retries, backoff_s)
        return fn

    return register


def handler_for(trigger: Trigger) -> HandlerSpec | None:
    return _HANDLERS.get(type(trigger))
