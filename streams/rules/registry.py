"""The rule registry: `@rule` declares one; `RuleEngine` loads modules and validates config."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from schemas.envelope import Event
from schemas.events import Trigger

S = TypeVar("S")
F = TypeVar("F", bound=Callable[..., Iterable[Trigger]])


class RuleConfig(BaseModel):
    """Every rule's config has these; a rule extends it with its thresholds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    severity: Literal["info", "warning", "critical"] = "warning"


class RuleConfigError(ValueError):
    """A rule's configuration is invalid; raised at start, never while consuming."""


@dataclass(frozen=True)
class RuleSpec:
    name: str
    on: tuple[type[Event], ...]
    fn: Callable[..., Iterable[Trigger]]
    config_model: type[RuleConfig]


_RULES: dict[str, RuleSpec] = {}


def rule(
    name: str, *, on: tuple[type[Event], ...], config: type[RuleConfig] = RuleConfig
) -> Callable[[F], F]:
    """Register `fn(state, event, config) -> triggers` for the event types in `on`.

    The function is returned unchanged, so it stays directly callable in tests.
    """

    def register(fn: F) -> F:
        if name in _RULES and _RULES[name].fn is not fn:
            raise ValueError(f"rule {name!r} is registered twice")
        _RULES[name] = RuleSpec(name=name, on=on, fn=fn, config_model=config)
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
        """Import rule modules (which register rules) and bind each rule to its config."""
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
            if cfg.enabled:
                bound.append(BoundRule(spec, cfg))
        return cls(bound)

    def evaluate(self, state: Any, event: Event) -> list[Trigger]:
        """Triggers of every rule interested in `event`, given the state after folding it."""
        triggers: list[Trigger] = []
        for bound in self._by_type.get(type(event), ()):
            triggers.extend(bound.spec.fn(state, event, bound.config))
        return triggers
