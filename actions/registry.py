"""Handler registry: one decorated function per trigger type, with its retry policy and guard."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from actions.slack.words import fold
from schemas.events import Trigger

if TYPE_CHECKING:
    from actions.context import ActionContext
    from actions.fleet import FleetSizes
    from actions.ledger import History
    from actions.settings import ActionsSettings

Handler = Callable[[Any, "ActionContext"], dict[str, Any]]
# A guard (circuit breaker) returns why the action must not run now, or None.
Guard = Callable[[Any, "History", "ActionsSettings", datetime, "FleetSizes"], str | None]
H = TypeVar("H", bound=Handler)


@dataclass(frozen=True)
class HandlerSpec:
    name: str
    trigger: type[Trigger]
    fn: Handler
    retries: int
    backoff_s: float
    timeout_s: float
    guard: Guard | None
    done: str  # what a success means, for people: `{nodes}` and `{subject}` are filled in
    not_done: str

    def headline(self, trigger: Trigger, *, succeeded: bool) -> str:
        nodes = named(getattr(trigger.payload, "nodes", ())) or trigger.subject
        words = self.done if succeeded else self.not_done
        return words.format(nodes=nodes, subject=trigger.subject)

    def line(self, trigger: Trigger, *, succeeded: bool) -> str:
        """The headline as a digest folds it: `{nodes}` left for every message's nodes."""
        if not getattr(trigger.payload, "nodes", ()):
            return self.headline(trigger, succeeded=succeeded)
        words = self.done if succeeded else self.not_done
        return words.format(nodes="{nodes}", subject=trigger.subject)


_HANDLERS: dict[type[Trigger], HandlerSpec] = {}


def handles(
    trigger: type[Trigger],
    *,
    name: str,
    retries: int = 3,
    backoff_s: float = 1.0,
    timeout_s: float = 120.0,
    guard: Guard | None = None,
    done: str | None = None,
    not_done: str | None = None,
) -> Callable[[H], H]:
    """Register `fn(trigger, ctx) -> detail` for one trigger type; returns it unchanged.

    `TemporaryError` is retried `retries` times, waiting `backoff_s * 2**n`; `PermanentError`,
    any other exception and running past `timeout_s` fail at once. `done` and `not_done` are
    the headlines people read when it succeeded or did not (`{nodes}`, `{subject}` filled in).
    """

    def register(fn: H) -> H:
        if trigger in _HANDLERS and _HANDLERS[trigger].fn is not fn:
            raise ValueError(f"{trigger.__name__} already has a handler")
        _HANDLERS[trigger] = HandlerSpec(
            name,
            trigger,
            fn,
            retries,
            backoff_s,
            timeout_s,
            guard,
            done or f"{name} done",
            not_done or f"{name} not done",
        )
        return fn

    return register


def named(nodes: Sequence[str]) -> str:
    """A few nodes by name, more folded into a hostlist."""
    return ", ".join(nodes) if len(nodes) <= 3 else fold(nodes)


def handler_for(trigger: Trigger) -> HandlerSpec | None:
    return _HANDLERS.get(type(trigger))


def handler_names() -> list[str]:
    """The name of every registered handler: what an allowlist (`CENTRALITY_ACTIONS_ALLOW`)
    names."""
    return sorted(spec.name for spec in _HANDLERS.values())
