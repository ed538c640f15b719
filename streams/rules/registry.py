"""The rule registry: `@rule` declares one; `RuleEngine` loads modules and validates config.

Loading is where a rule set that cannot work is refused, with one line naming what to fix: a
module that does not import, configuration for a rule nobody registered (with the nearest
names), a config value a rule does not take, a rule on events no table routes (it would load
and never run), a scope that selects by an unknown key or overrides a field the rule does not
have, a scope on keys no subject of the rule has, two scopes that would tie on a subject
(`streams.rules.scopes`).
"""

from __future__ import annotations

import difflib
import importlib
import itertools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from schemas.envelope import Event
from schemas.events import Trigger
from schemas.events.triggers import Severity as Severity  # rules import it from here
from schemas.groups import Match
from schemas.limits import TEXT
from schemas.runtime import tracing
from streams.rules.invalid import decision_invalid
from streams.rules.scopes import Scope, chosen, clash
from streams.rules.signals import KEEP_SIGNALS_MAX, Signals
from streams.state.entities import KINDS, kind_of_type
from streams.state.incidents import WINDOW_S as INCIDENT_WINDOW_S
from streams.state.memo import FIRED_IDS_KEPT, Fired, RuleMemo, Signal

S = TypeVar("S")
F = TypeVar("F", bound=Callable[..., Iterable[Trigger]])
Due = Callable[[Any, Any], Iterable[datetime]]
Mode = Literal["live", "shadow"]


class RuleConfig(BaseModel):
    """Every rule's config has these; a rule extends it with its thresholds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = Field(
        default=True, description="False switches the rule off, a built-in one included."
    )
    mode: Mode = Field(
        default="live",
        description="live: its decisions are carried out. shadow: it decides as usual, and its "
        "triggers are recorded (marked `shadow`) but never carried out nor taken as having "
        "happened; `centrality shadow report` sets them beside what was done.",
    )
    severity: Severity = "warning"
    for_s: float = Field(
        default=0.0,
        ge=0,
        description="The rule's condition must hold this long (event time) before it fires. "
        "It is checked whenever the rule is evaluated (on its events and on clock ticks): it "
        "fires on the first evaluation at least for_s after the first one that held, provided "
        "no evaluation in between found it false.",
    )
    for_count: int = Field(
        default=1,
        ge=1,
        le=1000,
        description="Debounce: the rule's condition must hold on this many evaluations in a row "
        "(its events and clock ticks) before it fires, as well as for `for_s`; an evaluation "
        "that finds it false starts the count again. 1: the first time it holds.",
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
    keep_signals: int = 0

    @property
    def module(self) -> str:
        return self.fn.__module__


_RULES: dict[str, RuleSpec] = {}


def rule(
    name: str,
    *,
    on: tuple[type[Event], ...],
    config: type[RuleConfig] = RuleConfig,
    due: Due | None = None,
    keep_signals: int = 0,
) -> Callable[[F], F]:
    """Register `fn(state, event, config) -> triggers` for the event types in `on`.

    With `keep_signals=N` the rule is `fn(state, event, config, signals)`: `signals` is what it
    remembers of the subject (`streams.rules.signals.Signals`), up to N signals.

    A rule on clock ticks may say when it can next decide: `due(state, config)` gives the
    instants from which its condition may hold (a silence limit reached, a stall begun). It is a
    promise: a tick earlier than all of them, with the state unchanged, decides nothing new.
    Then only the entities something is due for are ticked (`streams.brain.timers`); a tick rule
    without `due` has every entity of its kind ticked on every tick.

    The function is returned unchanged, so it stays directly callable in tests.
    """

    if not 0 <= keep_signals <= KEEP_SIGNALS_MAX:
        raise ValueError(f"rule {name!r}: keep_signals must be within 0..{KEEP_SIGNALS_MAX}")

    def register(fn: F) -> F:
        if name in _RULES and _RULES[name].fn is not fn:
            raise ValueError(f"rule {name!r} is registered twice")
        _RULES[name] = RuleSpec(name, on, fn, config, due, keep_signals)
        return fn

    return register


def registered_rules() -> dict[str, RuleSpec]:
    return dict(_RULES)


@dataclass(frozen=True)
class BoundRule:
    spec: RuleSpec
    config: RuleConfig
    scopes: tuple[Scope, ...] = ()

    def scope_for(self, state: Any) -> Scope | None:
        """The scope that decides for `state` (the most specific that selects it); None: the
        rule's own config does."""
        return chosen(self.scopes, state.group_facts) if self.scopes else None

    def config_for(self, state: Any) -> RuleConfig:
        """The config that decides for `state`: its scope's, else the rule's own."""
        scope = self.scope_for(state)
        return self.config if scope is None else scope.config

    def deciding(self, state: Any) -> tuple[Scope | None, RuleConfig, str] | None:
        """What decides for `state`: the scope (if one does), its config and where the rule's
        memo keeps it (`memo_key`); None when that config is off. Asked for every event the
        rule reacts to and every timer set: most rules have no scopes, and answer at once."""
        if not self.scopes:
            return self._unscoped
        return _deciding(self.spec.name, self.scope_for(state), self.config)

    @cached_property
    def _unscoped(self) -> tuple[Scope | None, RuleConfig, str] | None:
        return _deciding(self.spec.name, None, self.config)

    @property
    def kinds(self) -> frozenset[str]:
        """The kinds of subject it decides about: `nodes`, `jobs`, `node_sets`."""
        return subject_kinds(self.spec)

    @property
    def configs(self) -> tuple[RuleConfig, ...]:
        """The rule's own config and its scopes'."""
        return (self.config, *(s.config for s in self.scopes))

    @property
    def enabled(self) -> bool:
        """On somewhere: by its own config, or in one of its scopes."""
        return any(c.enabled for c in self.configs)


def _deciding(
    name: str, scope: Scope | None, own: RuleConfig
) -> tuple[Scope | None, RuleConfig, str] | None:
    config = own if scope is None else scope.config
    return (scope, config, memo_key(name, config)) if config.enabled else None


def memo_key(name: str, config: RuleConfig) -> str:
    """Where a rule's `for_s` and firings are remembered: a rule in shadow keeps its own, so
    that once promoted its first live decision is neither taken as made nor cooled down."""
    return name if config.mode == "live" else f"shadow/{name}"


class RuleEngine:
    """The enabled rules with validated config, indexed by the event types they react to;
    `off`, the rules of the loaded modules that config switched off."""

    def __init__(
        self,
        rules: Iterable[BoundRule],
        off: Iterable[BoundRule] = (),
        incident_window_s: float = INCIDENT_WINDOW_S,
    ) -> None:
        self.rules = tuple(rules)
        self.off = tuple(off)
        # Faults of one kind within this long of one another are one incident (event time).
        self.incident_window_s = incident_window_s
        self._by_type: dict[type[Event], list[BoundRule]] = {}
        for bound in self.rules:
            for cls in bound.spec.on:
                self._by_type.setdefault(cls, []).append(bound)

    @classmethod
    def load(
        cls,
        modules: Iterable[str],
        config: Mapping[str, Mapping[str, Any]],
        incident_window_s: float = INCIDENT_WINDOW_S,
    ) -> RuleEngine:
        """Import rule modules (which register rules) and bind their rules to their config.

        Config is validated for every registered rule; only the rules of `modules` are bound.
        Raises `RuleConfigError`, one line naming what to fix.
        """
        modules = list(dict.fromkeys(modules))
        for module in modules:
            _import(module)
        known = registered_rules()
        unknown = sorted(set(config) - set(known))
        if unknown:
            raise RuleConfigError(_unknown(unknown, sorted(known)))
        bound: list[BoundRule] = []
        off: list[BoundRule] = []
        for name, spec in known.items():
            one = _bound(spec, config.get(name, {}))
            if spec.module not in modules:
                continue
            _check_routed(spec)
            (bound if one.enabled else off).append(one)
        return cls(bound, off, incident_window_s)

    def on(self, event_type: type[Event]) -> list[BoundRule]:
        """The enabled rules that react to `event_type`."""
        return self._by_type.get(event_type, [])

    def evaluate(self, state: Any, event: Event) -> list[Trigger]:
        """Triggers of every rule interested in `event`, given the state after folding it."""
        return self.run(state, event, getattr(state, "rule_memo", RuleMemo()))[0]

    def run(self, state: Any, event: Event, memo: RuleMemo) -> tuple[list[Trigger], RuleMemo]:
        """Evaluate, applying `for_s`, cooldown and once-per-id with the subject's memo; a rule
        in shadow has its decisions marked (`Trigger.as_shadow`).

        Time is the event's `occurred_at`, so live, tests and replay agree.
        """
        now = event.occurred_at
        triggers: list[Trigger] = []
        # The memo's own dicts until a rule needs them changed: most evaluations decide nothing
        # and leave the memo as it was, and then cost no copy.
        pending, counts, fired = memo.pending_since, memo.pending_count, memo.fired
        signals = memo.signals
        copied = False
        traced = tracing.enabled()
        for bound in self._by_type.get(type(event), ()):
            spec = bound.spec
            deciding = bound.deciding(state)
            if deciding is None:  # switched off for this subject's scope
                continue
            scope, cfg, key = deciding
            started_ns = time.time_ns() if traced else 0
            try:
                if spec.keep_signals:
                    kept = Signals(signals.get(spec.name, ()), now, spec.keep_signals)
                    decided = list(spec.fn(state, event, cfg, kept))
                    if kept.changed:
                        signals = _with(signals, spec.name, kept.kept, memo.signals)
                else:
                    decided = list(spec.fn(state, event, cfg))
            except ValidationError as exc:  # one invalid decision: the fold and the rest go on
                decision_invalid(spec.name, event, exc)
                continue
            if not decided and key not in pending:
                continue
            if not copied:
                pending, counts, fired, copied = dict(pending), dict(counts), dict(fired), True
            if not decided:
                del pending[key]
                counts.pop(key, None)
                continue
            fresh, held = _admit(key, cfg, decided, now, pending, counts, fired)
            if scope is not None:
                fresh = [_told(t, scope) for t in fresh]
            if cfg.mode == "shadow":
                fresh = [t.as_shadow() for t in fresh]
            triggers.extend(fresh)
            if started_ns:  # traced: a span for each rule that decided something
                attributes = _decision(spec.name, event, fresh, held)
                tracing.record(f"rule {spec.name}", started_ns, attributes)
        if (
            pending == memo.pending_since
            and counts == memo.pending_count
            and fired == memo.fired
            and signals is memo.signals
        ):
            return triggers, memo
        memo = RuleMemo(pending_since=pending, pending_count=counts, fired=fired, signals=signals)
        return triggers, memo


def _told(trigger: Trigger, scope: Scope) -> Trigger:
    """The decision's reason names the scope that decided it."""
    said = f" ({scope.said})"
    reason = trigger.payload.reason[: TEXT - len(said)] + said
    return trigger.model_copy(
        update={"payload": trigger.payload.model_copy(update={"reason": reason})}
    )


def _with(
    signals: dict[str, tuple[Signal, ...]],
    name: str,
    kept: tuple[Signal, ...],
    original: dict[str, tuple[Signal, ...]],
) -> dict[str, tuple[Signal, ...]]:
    """`signals` with `name`'s replaced (copied first if still the memo's own)."""
    updated = dict(signals) if signals is original else signals
    if kept:
        updated[name] = kept
    else:
        updated.pop(name, None)
    return updated


def _import(module: str) -> None:
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(f"{exc.name}.")):
            raise RuleConfigError(
                f"no rule module {module!r}: install it where the worker runs, or put it on "
                "PYTHONPATH, or fix its name in CENTRALITY_RULES"
            ) from exc
        raise RuleConfigError(_broken(module, exc)) from exc
    except Exception as exc:  # whatever the module's own code raised: it did not load
        raise RuleConfigError(_broken(module, exc)) from exc


def _broken(module: str, exc: BaseException) -> str:
    where = ""
    if isinstance(exc, SyntaxError) and exc.filename:
        where = f" ({exc.filename}:{exc.lineno})"
    else:
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None:
            where = f" ({tb.tb_frame.f_code.co_filename}:{tb.tb_lineno})"
    detail = " ".join(str(exc).split())
    return f"rule module {module!r} does not import: {type(exc).__name__}: {detail}{where}"


def _unknown(unknown: list[str], known: list[str]) -> str:
    said = []
    for name in unknown:
        near = difflib.get_close_matches(name, known, n=1)
        said.append(f"{name!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
    return (
        f"CENTRALITY_STREAMS_RULE_CONFIG configures no such rule: {', '.join(said)}; the rules "
        f"are {', '.join(known)} (`centrality rules` lists them)"
    )


def _bound(spec: RuleSpec, given: Mapping[str, Any]) -> BoundRule:
    """The rule with its config and its scopes', validated."""
    own = {k: v for k, v in given.items() if k != "scopes"}
    config = _validated(spec, spec.config_model, own)
    listed = given.get("scopes", [])
    if not isinstance(listed, list):
        raise RuleConfigError(f"rule {spec.name!r}: scopes: {_SCOPE}")
    scopes = tuple(_scope(spec, own, i, raw) for i, raw in enumerate(listed))
    for (i, a), (j, b) in itertools.combinations(enumerate(scopes), 2):
        if clash(a.match, b.match, subject_kinds(spec)):
            raise RuleConfigError(
                f"rule {spec.name!r}: scopes.{i} ({a.match.said()}) and scopes.{j} "
                f"({b.match.said()}) can select the same subject with the same specificity, so "
                "which decides would be arbitrary: make one more specific, or merge them"
            )
    return BoundRule(spec, config, scopes)


_SCOPE = "a list of scopes, each {match: {cluster, node, gpu_model, partition, feature, label, "
_SCOPE += "job_name, user, min_nodes}, "
_SCOPE += "and the rule's fields it sets there}"


def _scope(spec: RuleSpec, own: Mapping[str, Any], i: int, raw: Any) -> Scope:
    where = f"scopes.{i}"
    if not isinstance(raw, Mapping) or "match" not in raw or "scopes" in raw:
        raise RuleConfigError(f"rule {spec.name!r}: {where}: {_SCOPE}")
    match = _validated(spec, Match, raw["match"], f"{where}.match")
    if match.specificity == 0:
        raise RuleConfigError(f"rule {spec.name!r}: {where}.match: selects by nothing; {_SCOPE}")
    if not match.kinds & subject_kinds(spec):
        raise RuleConfigError(
            f"rule {spec.name!r}: {where}.match ({match.said()}): selects no subject the rule "
            f"decides about ({', '.join(sorted(subject_kinds(spec)))}): {_APPLY}"
        )
    overrides = {k: v for k, v in raw.items() if k != "match"}
    return Scope(match, _validated(spec, spec.config_model, {**own, **overrides}, where), overrides)


_APPLY = "node, gpu_model, feature and label select nodes; job_name, user and min_nodes jobs"


def subject_kinds(spec: RuleSpec) -> frozenset[str]:
    """The kinds of subject the rule decides about (the tables of its events)."""
    return frozenset(k.table for k in map(kind_of_type, spec.on) if k is not None)


M = TypeVar("M", bound=BaseModel)


def _validated(spec: RuleSpec, model: type[M], given: Any, where: str = "") -> M:
    try:
        return model.model_validate(given)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join([*([where] if where else []), *(str(p) for p in e['loc'])]) or 'config'}: "
            f"{e['msg']}"
            for e in exc.errors()
        )
        raise RuleConfigError(f"rule {spec.name!r}: {problems}") from None


def _check_routed(spec: RuleSpec) -> None:
    """A rule on a type no table owns would load and never run: refused instead."""
    for cls in spec.on:
        if kind_of_type(cls) is None:
            routed = "; ".join(
                f"{kind.table}: {', '.join(sorted(t.__name__ for t in kind.owns))}"
                for kind in KINDS
            )
            raise RuleConfigError(
                f"rule {spec.name!r} ({spec.module}) reacts to {cls.__name__}, which no table "
                f"routes: it would never run. Rules react to the events of a table ({routed})"
            )


def _admit(
    name: str,
    cfg: RuleConfig,
    decided: list[Trigger],
    now: datetime,
    pending: dict[str, datetime],
    counts: dict[str, int],
    fired: dict[str, Fired],
) -> tuple[list[Trigger], str | None]:
    """What a rule decided that goes out now, or why nothing does (`for_s` or `for_count` not
    yet reached, all decided before, cooldown); `pending`, `counts` and `fired` are updated in
    place."""
    since = pending.setdefault(name, now)
    if cfg.for_count > 1:  # counted only where asked: most rules' memos stay as they were
        counts[name] = min(counts.get(name, 0) + 1, cfg.for_count)
        if counts[name] < cfg.for_count:
            return [], "for_count"
    # Zero holds nothing, whatever the clocks: an action result stamped by another clock than
    # the events before it (behind them) must not read as inside a window of no length.
    if cfg.for_s and (now - since).total_seconds() < cfg.for_s:
        return [], "for_s"
    last = fired.get(name)
    fresh = [t for t in decided if last is None or t.event_id not in last.trigger_ids]
    if not fresh:
        return [], "decided before"
    if last is not None and cfg.cooldown_s and (now - last.at).total_seconds() < cfg.cooldown_s:
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
