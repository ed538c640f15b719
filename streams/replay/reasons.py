"""Why a replay did not reproduce a decision, for each one it did not.

Replay is the ground truth that pricing a rule rests on: over any range, with the rules that
decided it, every decision comes back the same, or is named here with the reason it cannot:

- `operator`: a person's command, recorded as a decision; rules never make it;
- `rule_not_loaded`: the rule that decided it is not loaded (or is disabled) now;
- `decided_in_warmup`: the replay's clock decided it a tick before the range (live and replay
  tick at other instants; a tick rule's decision carries its tick's time);
- `recorded_outside_range`: decided live too, a tick outside the range;
- `history_before_warmup`: the subject's history (or the decision's causes) begins before the
  warm-up, so state replay never folded (quarantine episodes, attempts, windows, silences) may
  decide it; a warm-up reaching that far is said;
- `unexplained`: none of these: rules, config or state differ from when it was decided.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from schemas.envelope import Event
from schemas.events import Trigger
from streams.replay.rerun import Decision
from streams.state.internal import NODE_SET_PREFIX

Reason = Literal[
    "operator",
    "rule_not_loaded",
    "decided_in_warmup",
    "recorded_outside_range",
    "history_before_warmup",
    "unexplained",
]
# Beyond this many subjects, history before the warm-up is not looked up (one query each batch).
SUBJECTS_LOOKED_UP_MAX = 5000


@dataclass(frozen=True)
class Why:
    reason: Reason
    words: str


class Lookups:
    """What naming the reasons asks of history: events by id, and each subject's first event
    time before an instant (a source that cannot say answers nothing)."""

    def __init__(
        self,
        events_by_id: Callable[[Sequence[str]], Mapping[str, Event]],
        first_seen: Callable[[Sequence[str], datetime], Mapping[str, datetime]],
    ) -> None:
        self.events_by_id = events_by_id
        self.first_seen = first_seen


def name_differences(
    decisions: Iterable[Decision],
    *,
    loaded_rules: Collection[str],
    warmup_start: datetime,
    since: datetime,
    until: datetime,
    decided_in_warmup: Mapping[str, datetime],
    lookups: Lookups,
    tick_interval_s: float = 5.0,
) -> dict[str, Why]:
    """A `Why` for every decision whose status is not `same`, by trigger id. One decided on
    either side of a range's edge is named so only when the two instants are a tick apart at
    most: an id decided long before is the same name reused (a count replay did not know)."""
    differing = [d for d in decisions if d.status != "same"]
    if not differing:
        return {}
    new_ids = [d.trigger_id for d in differing if d.status == "new"]
    recorded_elsewhere = (
        {tid: e for tid, e in lookups.events_by_id(new_ids).items() if isinstance(e, Trigger)}
        if new_ids
        else {}
    )
    causes = _causes(differing, lookups)
    subjects = sorted({s for d in differing for s in _subjects(d.trigger)})
    first = (
        dict(lookups.first_seen(subjects, warmup_start))
        if len(subjects) <= SUBJECTS_LOOKED_UP_MAX
        else {}
    )
    out: dict[str, Why] = {}
    for d in differing:
        out[d.trigger_id] = _why(
            d,
            loaded_rules,
            _Range(warmup_start, since, until, timedelta(seconds=tick_interval_s)),
            decided_in_warmup,
            recorded_elsewhere,
            causes,
            first,
        )
    return out


@dataclass(frozen=True)
class _Range:
    warmup_start: datetime
    since: datetime
    until: datetime
    tick: timedelta

    def a_tick_apart(self, a: datetime, b: datetime) -> bool:
        return abs(a - b) <= self.tick


def _why(
    d: Decision,
    loaded_rules: Collection[str],
    r: _Range,
    decided_in_warmup: Mapping[str, datetime],
    recorded_elsewhere: Mapping[str, Trigger],
    causes: Mapping[str, datetime],
    first: Mapping[str, datetime],
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
    if d.status == "missing" and at is not None and r.a_tick_apart(at, t.occurred_at):
        return Why(
            "decided_in_warmup",
            f"replay decided it at {at.isoformat()}, in the warm-up before "
            f"{r.since.isoformat()}: its clock ticks at other instants than the live worker's",
        )
    live = recorded_elsewhere.get(d.trigger_id)
    if d.status == "new" and live is not None and r.a_tick_apart(live.occurred_at, t.occurred_at):
        return Why(
            "recorded_outside_range",
            f"decided live at {live.occurred_at.isoformat()}, outside "
            f"{r.since.isoformat()} to {r.until.isoformat()}",
        )
    earliest = min(
        [
            *(causes[str(c)] for c in t.payload.caused_by if str(c) in causes),
            *(first[s] for s in _subjects(t) if s in first),
        ],
        default=None,
    )
    if earliest is not None and earliest < r.warmup_start:
        reach_s = math.ceil((r.since - earliest).total_seconds())
        return Why(
            "history_before_warmup",
            f"its inputs begin at {earliest.isoformat()}, before the warm-up (from "
            f"{r.warmup_start.isoformat()}): state replay did not fold may decide it; "
            f"--warmup-s {reach_s} reaches it",
        )
    return Why("unexplained", "rules, their config or the state differ from when it was decided")


def _subjects(trigger: Trigger) -> list[str]:
    """Whose history the decision may rest on: its subject and the nodes it names (a node
    set's key stands for its nodes)."""
    subject = trigger.subject
    nodes = list(getattr(trigger.payload, "nodes", ()))
    if subject.startswith(NODE_SET_PREFIX):
        return nodes
    return [subject, *nodes]


def _causes(differing: Sequence[Decision], lookups: Lookups) -> dict[str, datetime]:
    ids = sorted({str(c) for d in differing for c in d.trigger.payload.caused_by})
    if not ids:
        return {}
    return {i: e.occurred_at for i, e in lookups.events_by_id(ids).items()}


def counts(whys: Mapping[str, Why]) -> dict[str, int]:
    """How many decisions each reason names, most first."""
    tally: dict[str, int] = {}
    for why in whys.values():
        tally[why.reason] = tally.get(why.reason, 0) + 1
    return dict(sorted(tally.items(), key=lambda kv: (-kv[1], kv[0])))
