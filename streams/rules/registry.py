"""The rule registry: `@rule` declares one; `RuleEngine` loads modules and validates config."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from schemas import tracing
from schemas.envelope import Event
from schemas.events import Trigger
from schemas.events.triggers import Severity as Severity  # rules import it from here
from streams.state.memo import FIRED_IDS_KEPT, Fired, RuleMemo

S = TypeVar("S")
F = TypeVar("F", bound=Callable[..., Iterable[Trigger]])
Due = Callable[[Any, Any], Iterable[datetime]]


class RuleConfig(BaseModel):
    """Every rule's config has these; a rule extends it with its thresholds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    severity: Severity = "warning"
    for_s: float = Field(
        default=0.0,
        ge=0,
        description="The rule's condition must hold this long (event time) before it fires. "
        "It is checked whenever the rule is evaluated (on its events and on clock ticks): it "
        "fires on the first evaluation at least for_s after the first one that held, provided "
        "no evaluation in between found it false.",
    )
    cooldown_s: float = Field(
        default=0.0,
        ge=0,
        description="After firing for a subject, decisions with a different trigger id are "
        "suppressed for this long (event time). The same id is never emitted twice anyway.",
    )


class RuleConfigError(ValueError):
    """A rule's configuration is invalid; raised at start, never while consuming."""


@dataclass(frozen=True)
class RuleSpec:
    name: str
    on: tuple[type[Event], ...]
    fn: Callable[..., Iterable[Trigger]]
    config_model: type[RuleConfig]
    due: Due | None = None


_RULES: dict[str, RuleSpec] = {}


def rule(
    name: str,
    *,
    on: tuple[type[Event], ...],
    config: type[RuleConfig] = RuleConfig,
    due: Due | None = None,
) -> Callable[[F], F]:
    """Register `fn(state, event, config) -> triggers` for the event types in `on`.

    A rule on clock ticks may say when it can next decide: `due(state, config)` gives the
    instants from which its condition may hold (a silence limit reached, a stall begun). It is a
    promise: a tick earlier than all of them, with the state unchanged, decides nothing new.
    Then only the entities something is due for are ticked (`streams.timers`); a tick rule
    without `due` has every entity of its kind ticked on every tick.

    The function is returned unchanged, so it stays directly callable in tests.
    """

    def register(fn: F) -> F:
        if name in _RULES and _RULES[name].fn is not fn:
            raise ValueError(f"rule {name!r} is registered twice")
        _RULES[name] = RuleSpec(name=name, on=on, fn=fn, config_model=config, due=due)
        return fn

    return register


def registered_rules() -> dict[str, RuleSpec]:
    return dict(_RULES)


@dataclass(frozen=True)
class BoundRule:
    spec: RuleSpec
    config: RuleConfig


class RuleEngine:
    """The enabled rules with validated config, indexed by the event types they react to."""

    def __init__(self, rules: Iterable[BoundRule]) -> None:
        self.rules = tuple(rules)
        self._by_type: dict[type[Event], list[BoundRule]] = {}
        for bound in self.rules:
            for cls in bound.spec.on:
                self._by_type.setdefault(cls, []).append(bound)

    @classmethod
    def load(cls, modules: Iterable[str], config: Mapping[str, Mapping[str, Any]]) -> RuleEngine:
        """Import rule modules (which register rules) and bind their rules to their config.

        Config is validated for every registered rule; only the rules of `modules` are bound.
        """
        modules = list(modules)
        for module in modules:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise RuleConfigError(f"cannot import rule module {module!r}: {exc}") from exc
        known = registered_rules()
        unknown = set(config) - set(known)
        if unknown:
            raise RuleConfigError(
                f"config for unknown rules {sorted(unknown)}; known: {sorted(known)}"
            )
        bound = []
        for name, spec in known.items():
            try:
                cfg = spec.config_model.model_validate(config.get(name, {}))
            except ValidationError as exc:
                raise RuleConfigError(f"rule {name!r}: {exc}") from exc
            if cfg.enabled and spec.fn.__module__ in modules:
                bound.append(BoundRule(spec, cfg))
        return cls(bound)

    def on(self, event_type: type[Event]) -> list[BoundRule]:
        """The enabled rules that react to `event_type`."""
        return self._by_type.get(event_type, [])

    def evaluate(self, state: Any, event: Event) -> list[Trigger]:
        """Triggers of every rule interested in `event`, given the state after folding it."""
        return self.run(state, event, getattr(state, "rule_memo", RuleMemo()))[0]

    def run(self, state: Any, event: Event, memo: RuleMemo) -> tuple[list[Trigger], RuleMemo]:
        """Evaluate, applying `for_s`, cooldown and once-per-id with the subject's memo.

        Time is the event's `occurred_at`, so live, tests and replay agree.
        """
        now = event.occurred_at
        triggers: list[Trigger] = []
        # The memo's own dicts until a rule needs them changed: most evaluations decide nothing
        # and leave the memo as it was, and then cost no copy.
        pending, fired = memo.pending_since, memo.fired
        copied = False
        traced = tracing.enabled()
        for bound in self.on(type(event)):
            name, cfg = bound.spec.name, bound.config
            started_ns = time.time_ns() if traced else 0
            decided = list(bound.spec.fn(state, event, cfg))
            if not decided and name not in pending:
                continue
            if not copied:
                pending, fired, copied = dict(pending), dict(fired), True
            if not decided:
                del pending[name]
                continue
            fresh, held = _admit(name, cfg, decided, now, pending, fired)
            triggers.extend(fresh)
            if started_ns:  # traced: a span for each rule that decided something
                tracing.record(f"rule {name}", started_ns, _decision(name, event, fresh, held))
        if pending == memo.pending_since and fired == memo.fired:
            return triggers, memo
        return triggers, RuleMemo(pending_since=pending, fired=fired)


def _admit(
    name: str,
    cfg: RuleConfig,
    decided: list[Trigger],
    now: datetime,
    pending: dict[str, datetime],
    fired: dict[str, Fired],
) -> tuple[list[Trigger], str | None]:
    """What a rule decided that goes out now, or why nothing does (`for_s` not yet over, all
    decided before, cooldown); `pending` and `fired` are updated in place."""
    since = pending.setdefault(name, now)
    if (now - since).total_seconds() < cfg.for_s:
        return [], "for_s"
    last = fired.get(name)
    fresh = [t for t in decided if last is None or t.event_id not in last.trigger_ids]
    if not fresh:
        return [], "decided before"
    if last is not None and (now - last.at).total_seconds() < cfg.cooldown_s:
        return [], "cooldown"
    kept = (*(last.trigger_ids if last else ()), *(t.event_id for t in fresh))
    fired[name] = Fired(at=now, trigger_ids=kept[-FIRED_IDS_KEPT:])
    return fresh, None


def _decision(name: str, event: Event, fresh: list[Trigger], held: str | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "centrality.rule": name,
        "centrality.event.type": event.type,
        "centrality.event.id": str(event.event_id),
        "centrality.triggers": [f"{t.type}:{t.event_id}" for t in fresh],
    }
    if held is not None:
        attributes["centrality.held"] = held
    return attributes
