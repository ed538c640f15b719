"""A part of the brain: every job and node set, and the nodes whose key falls in it.

Forwards run one way. A job's events, a node set's decisions and action results reach nodes;
nothing a node decides reaches a job or a node set, and the built-in node rules name only their
own node. So a brain may be cut into parts by node key: each part folds every job, node set and
action result, and only its own nodes. Each node then sees the very events and forwards, in the
same order, that the whole brain gives it, and decides the same; the triggers of what every part
folds are reported by the first part alone. A rule that breaks the premise (a node's decision
naming a node of another part) makes its step raise `NotSplittable`: the parts would decide
otherwise than the whole, so the caller decides it whole instead. `PartBrain` is the brain of
one part: the plain `Brain`, with what it is handed and what its steps report and forward kept
to the part.

Incidents are the exception, and by design: they group faults across nodes, so no part can
tell them. A part drops what its nodes tell incidents (`INCIDENT_KINDS`); no rule decides on
incidents, so the parts still decide what the whole does, and only the whole brain (one part)
reproduces the incidents themselves.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache

from schemas.envelope import Event
from schemas.events import Trigger
from schemas.registry import event_types
from streams.brain.process import Brain
from streams.rules.registry import RuleEngine
from streams.state.entities import (
    INCIDENT_BOOKS,
    INCIDENTS,
    NODES,
    Kind,
    Step,
    kind_of,
    kind_of_type,
)
from streams.state.forwards import forwards

INCIDENT_KINDS = (INCIDENT_BOOKS, INCIDENTS)


class NotSplittable(RuntimeError):
    """A node's step forwarded outside its part: only the whole brain decides this history."""


@lru_cache(maxsize=1 << 16)  # a fleet's node names: every node event of a part asks again
def key_hash(key: str) -> int:
    """CRC-32 of the key's UTF-8 bytes: ClickHouse's `crc32(subject)` is the same function, so
    a query can read exactly one part's events."""
    return zlib.crc32(key.encode())


@dataclass(frozen=True)
class Part:
    index: int
    count: int

    def __post_init__(self) -> None:
        if not 0 <= self.index < self.count:
            raise ValueError(f"part {self.index} of {self.count} does not exist")

    def holds(self, subject: str) -> bool:
        return key_hash(subject) % self.count == self.index

    def folds(self, event: Event) -> bool:
        """Any event but a node's of another part, and what is told to incidents."""
        kind = kind_of(event)
        return kind not in INCIDENT_KINDS and (kind is not NODES or self.holds(event.subject))

    def reports(self, kind: Kind) -> bool:
        """Whether this part reports the triggers of `kind`: its own nodes', and the first part
        those of what every part folds."""
        return kind is NODES or self.index == 0

    def check(self, kind: Kind, derived: Iterable[Event]) -> None:
        """Raise `NotSplittable` when a node's step forwards anything but to its own part's
        nodes: the part that should hear it, or the other parts' copies of a job, never would."""
        if kind is not NODES:
            return
        for event in derived:
            to = kind_of(event)
            if to in INCIDENT_KINDS:
                continue
            if to is not NODES or not self.holds(event.subject):
                raise NotSplittable(
                    f"a node's step forwarded {event.type} to {event.subject!r}, which another "
                    "part (or, a job or a node set, every part) folds"
                )


class PartBrain(Brain):
    """The brain of one part: it folds what the part folds (`Part.folds`, forwards included),
    reports what the part reports, and raises `NotSplittable` where a step's forwards would
    leave the part."""

    def __init__(self, engine: RuleEngine, part: Part) -> None:
        super().__init__(engine)
        self.part = part

    # `Brain.x(self, ...)`, not `super().x(...)`: twice a step, where super() would cost a part's
    # replay a few per cent.
    def handle(self, event: Event) -> list[Trigger]:
        return Brain.handle(self, event) if self.part.folds(event) else []

    def _fold(self, kind: Kind, event: Event) -> Step:
        result = Brain._fold(self, kind, event)
        self.part.check(kind, result.forwards)
        return result if self.part.reports(kind) else replace(result, triggers=[])


def split_types() -> list[str]:
    """Types each part reads for its own subjects only: nodes' events, and what nothing folds
    and nothing forwards (raw log lines, NCCL samples, action starts). Every part reads the rest,
    triggers aside (recorded decisions: read once, by the caller)."""
    no_forwards = forwards.dispatch(Event)
    return sorted(
        name
        for name, cls in event_types().items()
        if not issubclass(cls, Trigger)
        and (
            cls in NODES.owns
            or (kind_of_type(cls) is None and forwards.dispatch(cls) is no_forwards)
        )
    )
