"""The candidate's world: what was done about a quarantine it does not make never happened.

Replay folds what actions did (state follows outcomes), so a node the recorded rules drained is
drained in a candidate's replay too, whether or not the candidate asks for it: the evidence that
follows (an uncorrectable ECC count a sample later, a failing check) finds it out of service, and
another of the candidate's rules that would take it out then never gets the chance. A what-if
that removes a quarantine therefore re-decides the range a second time with the outcomes of that
quarantine's story left out: the drain, its benchmark, its release, each a decision of then on
the same nodes until the next quarantine of them. What the candidate's rules make of the node in
service is then what it would have done.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from schemas.events import QuarantineNodes, Trigger
from streams.analysis.replay.reasons import NOT_THE_RULES, Why
from streams.analysis.replay.rerun import Decision

R = TypeVar("R")
Redecided = tuple[R, list[Decision], dict[str, Why]]


def in_its_world(redecide: Callable[[frozenset[str]], Redecided[R]]) -> Redecided[R]:
    """The range re-decided by the candidate (`redecide`, given the decisions whose outcomes it
    leaves out): once as recorded, and again without the outcomes of the quarantines it does
    not make, if there are any."""
    first = redecide(frozenset())
    story = withheld(first[1], first[2])
    return redecide(story) if story else first


def the_candidate_s(why: Why | None) -> bool:
    """A difference the candidate makes (not one any rules would show)."""
    return why is None or why.reason not in NOT_THE_RULES


def withheld(decisions: Sequence[Decision], whys: Mapping[str, Why]) -> frozenset[str]:
    """The ids of the decisions of then whose outcomes the candidate's world never saw: each
    rule quarantine it does not make (its own difference, `whys`), and the later decisions of
    then about the same nodes up to their next quarantine (its story: benchmark, release,
    notices)."""
    then = sorted(
        (d.then for d in decisions if d.then is not None), key=lambda t: (t.occurred_at, t.type)
    )
    out: set[str] = set()
    for d in decisions:
        q = d.then
        if not isinstance(q, QuarantineNodes) or q.payload.operator is not None:
            continue
        if d.status == "missing" and the_candidate_s(whys.get(d.trigger_id)):
            out |= _story(q, then)
    return frozenset(out)


def _story(quarantine: QuarantineNodes, then: Sequence[Trigger]) -> set[str]:
    nodes = set(quarantine.payload.nodes)
    story = {str(quarantine.event_id)}
    for t in then:
        if t.occurred_at < quarantine.occurred_at or t.event_id == quarantine.event_id:
            continue
        if not nodes & set(getattr(t.payload, "nodes", ())):
            continue
        if isinstance(t, QuarantineNodes):
            break  # the next story of these nodes: its own
        story.add(str(t.event_id))
    return story
