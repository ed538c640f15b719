"""Candidate rules: the rule set the streams worker runs, with more modules or other settings.

`rule.field=value` (a dotted path into the rule's config: `repeated_failures_on_node_set.window.
window_s=7200`) sets one setting; the value is JSON where it reads as JSON (numbers, booleans,
lists), else text; `*` for the rule sets the field of every rule loaded (`*.enabled=false`:
no rules at all). Settings merge over the worker's own `rule_config`, so a candidate is the
rules of today with only what it names changed, and it is checked as the worker checks its own
(`RuleEngine.load`) before anything is read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings


class CandidateError(ValueError):
    """A candidate that cannot be loaded: the words say what is wrong with it."""


@dataclass(frozen=True)
class Candidate:
    settings: StreamsSettings
    modules: tuple[str, ...]  # added to the worker's
    sets: tuple[str, ...]  # as given

    @property
    def words(self) -> str:
        parts = [f"+{m}" for m in self.modules] + list(self.sets)
        return ", ".join(parts) or "the current rules"


def candidate(
    base: StreamsSettings, modules: Sequence[str] = (), sets: Sequence[str] = ()
) -> Candidate:
    config: dict[str, Any] = json.loads(json.dumps(base.rule_config))  # a deep copy
    own = ",".join(m for m in (base.rules, *modules) if m)  # the built-ins always load
    settings = base.model_copy(update={"rules": own, "rule_config": config})
    every = _loaded(settings)
    for text in sets:
        path, value = _setting(text)
        for name in every if path[0] == "*" else [path[0]]:
            _merge(config, [name, *path[1:]], value)
    _loaded(settings)
    return Candidate(settings, tuple(modules), tuple(sets))


def _loaded(settings: StreamsSettings) -> list[str]:
    """The rules of the candidate's modules, on or off, as the worker would load them."""
    try:
        engine = RuleEngine.load(settings.rule_modules, settings.rule_config)
    except ValueError as exc:  # RuleConfigError, or a module registering a rule twice
        raise CandidateError(str(exc)) from None
    return sorted(b.spec.name for b in (*engine.rules, *engine.off))


def _setting(text: str) -> tuple[list[str], Any]:
    path, sep, raw = text.partition("=")
    parts = path.strip().split(".")
    if not sep or len(parts) < 2 or not all(parts):
        raise CandidateError(f"{text!r} is not rule.field=value (e.g. fatal_xid.enabled=false)")
    try:
        value: Any = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return parts, value


def _merge(config: dict[str, Any], path: list[str], value: Any) -> None:
    at = config
    for name in path[:-1]:
        inner = at.setdefault(name, {})
        if not isinstance(inner, dict):
            raise CandidateError(f"{'.'.join(path)}: {name} is a value, not a group of settings")
        at = inner
    at[path[-1]] = value
