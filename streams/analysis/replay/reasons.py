"""Why a replay did not reproduce a decision, for each one it did not.

Replay is the ground truth that pricing a rule rests on: over any range, with the rules that
decided it, every decision comes back the same, or is named here with the reason it cannot:

- `operator`: a person's command, recorded as a decision; rules never make it;
- `rule_not_loaded`: the rule that decided it is not loaded (or is disabled) now;
- `decided_in_warmup`: the replay's clock decided it a tick before the range (live and replay
  tick at other instants, and a tick rule's decision carries its tick's time);
- `recorded_outside_range`: decided live too, a tick outside the range;
- `renamed`: the same decision (same rule, subject, time and words) under another name: history
  decided by a version that named a node's quarantine episodes by a count of its earlier stories
  (which lie before the warm-up), where they are now named by when each began;
- `state_before_warmup`: what the live worker showed of the subject when the warm-up began
  (its last status before then: out of service, jobs running there, a job's attempts and
  checkpoint) was state replay never folded;
- `causes_before_warmup`: events the decision names as its causes lie before the warm-up;
- `arrived_late`: decided by both, in other words, on causes written long after they happened
  (history sent in a burst, an agent's spool): the live worker folded what came on other
  topics (a job's start) in the order it arrived, a replay in event time;
- `unexplained`: none of these: rules, their config or state differ from when it was decided.

All but the first two and the last are the edges of a range: a longer warm-up (`--warmup-s`)
reaches them. Under candidate rules (`centrality whatif`) the first two and the last are what
the candidate changes; the rest would differ under any rules and are not the candidate's.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from schemas.envelope import Event
from schemas.events import Trigger
from streams.analysis.replay.rerun import Decision
from streams.state.internal import NODE_SET_PREFIX

Reason = Literal[
    "operator",
    "rule_not_loaded",
    "decided_in_warmup",
    "recorded_outside_range",
    "renamed",
    "state_before_warmup",
    "causes_before_warmup",
    "arrived_late",
    "unexplained",
]
# What would differ under any rules: a range's edges, people's commands.
NOT_THE_RULES: frozenset[Reason] = frozenset(
    {
        "operator",
        "decided_in_warmup",
        "recorded_outside_range",
        "renamed",
        "state_before_warmup",
        "causes_before_warmup",
        "arrived_late",
    }
)
# Written this much after they happened, events are history arriving late, not a live report.
LATE_S = 60.0
_ENDED_JOB = frozenset({"SUCCEEDED", "CANCELLED"})
Status = Mapping[str, Any]  # a status event's payload, as JSON


@dataclass(frozen=True)
class Why:
    reason: Reason
    words: str


@dataclass(frozen=True)
class Lookups:
    """What naming the reasons asks of history: events by id, and each subject's last status
    before an instant, with its time (a source that cannot say answers nothing)."""

    events_by_id: Callable[[Sequence[str]], Mapping[str, Event]]
    status_before: Callable[[Sequence[str], datetime], Mapping[str, tuple[datetime, Status]]]


@dataclass(frozen=True)
class Edges:
    """The range and its warm-up, and how far apart the live and replay clocks may tick."""

    warmup_start: datetime
    since: datetime
    until: datetime
    tick_interval_s: float = 5.0

    def a_tick_apart(self, a: datetime, b: datetime) -> bool:
        return abs(a - b) <= timedelta(seconds=self.tick_interval_s)


def name_differences(
    decisions: Iterable[Decision],
    *,
    loaded_rules: Collection[str],
    edges: Edges,
    decided_in_warmup: Mapping[str, datetime],
    lookups: Lookups,
) -> dict[str, Why]:
    """A `Why` for every decision whose status is not `same`, by trigger id. One decided on
    either side of the range's edge is named so only when the two instants are a tick apart at
    most: an id decided long before is the same name reused."""
    differing = [d for d in decisions if d.status != "same"]
    if not differing:
        return {}
    out = _renamed(differing)
    rest = [d for d in differing if d.trigger_id not in out]
    new_ids = [d.trigger_id for d in rest if d.status == "new"]
    live = {
        tid: e
        for tid, e in (lookups.events_by_id(new_ids) if new_ids else {}).items()
        if isinstance(e, Trigger)
    }
    cause_ids = sorted({str(c) for d in rest for c in d.trigger.payload.caused_by})
    causes = dict(lookups.events_by_id(cause_ids)) if cause_ids else {}
    subjects = sorted({s for d in rest for s in _subjects(d.trigger)})
    statuses = dict(lookups.status_before(subjects, edges.warmup_start)) if subjects else {}
    for d in rest:
        out[d.trigger_id] = _why(d, loaded_rules, edges, decided_in_warmup, live, causes, statuses)
    return out


def _renamed(differing: Sequence[Decision]) -> dict[str, Why]:
    """Pairs of one missing and one new decision that say the same at the same instant."""

    def key(d: Decision) -> tuple[Any, ...]:
        t = d.trigger
        words = t.payload.model_dump(exclude={"window"})
        return (t.type, t.subject, t.occurred_at, repr(sorted(words.items())))

    missing = {key(d): d for d in differing if d.status == "missing"}
    out: dict[str, Why] = {}
    for d in differing:
        then = missing.get(key(d)) if d.status == "new" else None
        if then is None or then.trigger_id in out:
            continue
        assert d.now is not None and then.then is not None
        words = (
            f"the same decision named {then.then.payload.window!r} live and "
            f"{d.now.payload.window!r} by replay: live counted {d.trigger.subject}'s earlier "
            "stories (history decided before episodes were named by their start)"
        )
        out[d.trigger_id] = out[then.trigger_id] = Why("renamed", words)
    return out


def _why(
    d: Decision,
    loaded_rules: Collection[str],
    edges: Edges,
    decided_in_warmup: Mapping[str, datetime],
    live: Mapping[str, Trigger],
    causes: Mapping[str, Event],
    statuses: Mapping[str, tuple[datetime, Status]],
) -> Why:
    t, then = d.trigger, d.then
    if d.status == "missing" and then is not None and then.payload.operator:
        return Why(
            "operator",
            f"an operator's command ({then.payload.operator}): people decide these, rules do not",
        )
    if d.status == "missing" and t.payload.rule not in loaded_rules:
        return Why("rule_not_loaded", f"rule {t.payload.rule} is not loaded now")
    at = decided_in_warmup.get(d.trigger_id)
    if d.status == "missing" and at is not None and edges.a_tick_apart(at, t.occurred_at):
        return Why(
            "decided_in_warmup",
            f"replay decided it at {at.isoformat()}, in the warm-up before "
            f"{edges.since.isoformat()}: its clock ticks at other instants than the live one",
        )
    other = live.get(d.trigger_id)
    if (
        d.status == "new"
        and other is not None
        and edges.a_tick_apart(other.occurred_at, t.occurred_at)
    ):
        return Why(
            "recorded_outside_range",
            f"decided live at {other.occurred_at.isoformat()}, outside "
            f"{edges.since.isoformat()} to {edges.until.isoformat()}",
        )
    for subject in _subjects(t):
        if subject in statuses and (said := _state_said(*statuses[subject])) is not None:
            return Why("state_before_warmup", f"{subject} {said} when the warm-up began")
    known = [causes[str(c)] for c in t.payload.caused_by if str(c) in causes]
    early = [e.occurred_at for e in known]
    if early and min(early) < edges.warmup_start:
        return Why(
            "causes_before_warmup",
            f"its causes begin at {min(early).isoformat()}, before the warm-up (from "
            f"{edges.warmup_start.isoformat()})",
        )
    late_s = max((_late_s(e) for e in known), default=0.0)
    if d.status == "changed" and late_s > LATE_S:
        return Why(
            "arrived_late",
            f"its causes were written {late_s:.0f} s after they happened: the live worker folded "
            "the topics in the order they came, a replay in event time",
        )
    return Why("unexplained", "rules, their config or the state differ from when it was decided")


def _late_s(event: Event) -> float:
    return (event.observed_at - event.occurred_at).total_seconds()


def _state_said(at: datetime, status: Status) -> str | None:
    """What a status shows that a replay starting afresh would not know, in words; None when
    it shows nothing such (a node in service with no story behind it and no jobs)."""
    state = status.get("state")
    if "episodes" in status:  # a node's
        if state == "in_service" and not status.get("episodes") and not status.get("jobs_running"):
            return None
        return (
            f"was {state} (as of {at.isoformat()}; {status.get('episodes', 0)} earlier "
            f"stories, {status.get('jobs_running', 0)} jobs running)"
        )
    if state in _ENDED_JOB:
        return None
    step = status.get("checkpoint_step")
    return (
        f"was {state} at attempt {status.get('attempt', 0)}"
        + (f", checkpointed at step {step}" if step is not None else "")
        + f" (as of {at.isoformat()})"
    )


def _subjects(trigger: Trigger) -> list[str]:
    """Whose state the decision rests on: its subject and the nodes it names (a node set's
    key stands for its nodes)."""
    nodes = list(getattr(trigger.payload, "nodes", ()))
    if trigger.subject.startswith(NODE_SET_PREFIX):
        return nodes
    return [trigger.subject, *nodes]


def counts(whys: Mapping[str, Why]) -> dict[str, int]:
    """How many decisions each reason names, most first."""
    tally: dict[str, int] = {}
    for why in whys.values():
        tally[why.reason] = tally.get(why.reason, 0) + 1
    return dict(sorted(tally.items(), key=lambda kv: (-kv[1], kv[0])))
