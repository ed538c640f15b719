"""The keyed entities of the brain and one pure step over any of them.

An entity kind names its table and how to fold an event into it; the event types it owns are
those its fold registers (`Kind.owns`), so a new type is routed by registering its fold.
`step` is the unit both the pure `Brain` and the Faust agents run: fold the events of one key,
evaluate rules with that key's memo, fold the brain's own decisions back in, and return what
other keys must hear about.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from schemas.envelope import Event
from schemas.events import Trigger
from streams.state import (
    incidents,
    job_pace,
    node,
    node_incidents,
    node_set,
    peers,
    training_job,
)
from streams.state.dispatch import by_type
from streams.state.forwards import forwards
from streams.state.internal import JobTick, NodeTick
from streams.state.memo import RuleMemo


class Decides(Protocol):
    """What `step` needs of the rules (`streams.rules.registry.RuleEngine`, which checks rules
    against these kinds and so imports this module, not the other way round)."""

    incident_window_s: float

    def run(self, state: Any, event: Event, memo: RuleMemo) -> tuple[list[Trigger], RuleMemo]: ...


@dataclass(frozen=True)
class Kind:
    """An entity kind: its table, its state's model, `apply` (one event into a state) and `fold`,
    the singledispatch function `apply` dispatches through.

    What `fold` registers when its module is imported (before the kind is made) is what the kind
    owns, with its `tick`: the event types routed to its table. The brain's own decisions it
    registers (a `RestartJob`, a `QuarantineNodes`) are not routed: `step` folds them back into
    the entity that made them.
    """

    table: str
    model: type[BaseModel]
    apply: Callable[[Any, Event], Any]
    fold: Callable[..., Any]
    tick: type[Event] | None = None
    # What an event means for others given this entity's state (a job resolving the peer its
    # log line names among its nodes); forwards that the event alone tells are `forwards`'.
    tells: Callable[[Any, Event], list[Event]] | None = None
    # What the entity tells others after an event that changed it, and itself as it remembers
    # having told it (a node's trouble, told to its incident: `streams.state.node_incidents`).
    reports: Callable[[Any, Event, float], tuple[Any, list[Event]]] | None = None
    owns: tuple[type[Event], ...] = field(init=False)

    def __post_init__(self) -> None:
        registered = self.fold.registry  # type: ignore[attr-defined]
        folded = [c for c in registered if issubclass(c, Event) and not issubclass(c, Trigger)]
        ticks = [self.tick] if self.tick is not None else []
        object.__setattr__(self, "owns", tuple(dict.fromkeys([*folded, *ticks])))


def routes(kinds: Iterable[Kind]) -> dict[type[Event], Kind]:
    """The kind that owns each type; a type two kinds own is refused (`TypeError`): an event
    goes to one table, and what it means for another is a forward (`streams.state.forwards`)."""
    found: dict[type[Event], Kind] = {}
    for kind in kinds:
        for cls in kind.owns:
            first = found.setdefault(cls, kind)
            if first is not kind:
                raise TypeError(
                    f"{cls.__name__} is folded by both {first.table} and {kind.table}: fold it "
                    "in one and forward what it means to the other (`streams.state.forwards`)"
                )
    return found


JOBS = Kind(
    "jobs",
    training_job.TrainingJob,
    training_job.apply,
    training_job.fold,
    tick=JobTick,
    tells=peers.told,
    reports=job_pace.reports,
)


NODES = Kind(
    "nodes", node.Node, node.apply, node.fold, tick=NodeTick, reports=node_incidents.reports
)
NODE_SETS = Kind("node_sets", node_set.NodeSet, node_set.apply, node_set.fold)
INCIDENT_BOOKS = Kind(
    "incident_books",
    incidents.IncidentBook,
    incidents.apply_book,
    incidents.fold_book,
    tells=incidents.assigned,
)
INCIDENTS = Kind("incidents", incidents.Incident, incidents.apply, incidents.fold)
KINDS = (JOBS, NODES, NODE_SETS, INCIDENT_BOOKS, INCIDENTS)

_forwards = by_type(forwards)
_KIND_OF = routes(KINDS)


def kind_of(event: Event) -> Kind | None:
    """The entity an event is about; None for events no table keeps (raw logs, NCCL samples,
    action results: those only matter through what they mean for others, see `forwards`)."""
    return _KIND_OF.get(type(event))


def kind_of_type(cls: type[Event]) -> Kind | None:
    """`kind_of` for the events of a type."""
    return _KIND_OF.get(cls)


def forwarded(event: Event) -> list[Event]:
    """What an event with no table of its own (an action result) means for those that have one.
    A trigger from outside is not the brain's own decision: it means nothing here."""
    return [] if isinstance(event, Trigger) else _forwards(event)


@dataclass
class Step:
    state: Any
    triggers: list[Trigger] = field(default_factory=list)
    forwards: list[Event] = field(default_factory=list)
    changed: bool = False  # False: the state is the very one given, nothing to write


def step(kind: Kind, state: Any, events: Sequence[Event], engine: Decides) -> Step:
    """Fold `events` (all of one key and kind) and decide; pure.

    Derived events addressed to this very entity are handled inline (so a node sees its own
    quarantine before its next event); the rest are returned in `forwards`. A decision in
    shadow (`payload.shadow`) is returned with the others and goes no further: it is neither
    folded back nor forwarded, so no state takes it as made.
    """
    out = Step(state)
    queue = deque(events)
    while queue:
        event = queue.popleft()
        before = out.state
        after = kind.apply(before, event)
        decided, memo = engine.run(after, event, after.rule_memo)
        if memo is not after.rule_memo:
            after = after.model_copy(update={"rule_memo": memo})
        if decided:  # most events decide nothing
            out.triggers.extend(decided)
            decided = [t for t in decided if not t.payload.shadow]
            for trigger in decided:
                after = kind.apply(after, trigger)  # feedback: a decision is state too
        told: list[Event] = []
        if kind.reports is not None and after is not before:
            after, told = kind.reports(after, event, engine.incident_window_s)
        out.state = after
        for derived in [*_derived(kind, after, event, decided), *told]:
            mine = derived.subject == _key(after) and kind_of(derived) is kind
            (queue if mine else out.forwards).append(derived)
    out.changed = out.state is not state
    return out


def _derived(kind: Kind, state: Any, event: Event, decided: list[Trigger]) -> list[Event]:
    told = kind.tells(state, event) if kind.tells is not None else []
    if not decided and not told:  # most events: what they imply alone
        return _forwards(event)
    return [*_forwards(event), *told, *(d for t in decided for d in _forwards(t))]


def _key(state: Any) -> str:
    return str(state.key)
