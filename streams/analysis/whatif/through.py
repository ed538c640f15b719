"""What a quarantine the candidate does not make lets through, in GPU-hours.

A node a rule took out was faulty with some probability `p`: 1 when its benchmark failed or it
failed again once released, 0 when its benchmark passed and it did not, else the rule's
precision measured over the range (`streams.analysis.outcomes`), else `CENTRALITY_WHATIF_PRECISION`.
Left in service, a faulty node is not repaired the sooner for it (a person takes it out, as
the bench's person does, after a job failed there), so only a sound one gives capacity back:
`(1 - p)` of the time it was out. What it costs, `p` times:

- idle when its fault showed, it fails the next job placed on it (a job as big as those the
  range's nodes ran, weighted by the nodes each took), which loses its work since it started
  from its checkpoint (it fails `fails_after_s` in: the range's restarts that failed again tell
  how long a job runs on a faulty node, else `CENTRALITY_WHATIF_FAILS_AFTER_S`), if a job is
  placed there before the range ends: as often as jobs started on that node over the range (a
  Poisson chance; a spare the scheduler never reached is never reached, and nobody finds it);
- with restarts (the candidate's restart rule, `max_restarts`), the job is restarted without
  avoiding the node (only a quarantine names the nodes a restart avoids): it goes back to it as
  often as the range's restarts went back to the nodes they had (`reuse`, measured, else
  `CENTRALITY_WHATIF_REUSE`) and fails there again; once it may be restarted no more it waits
  for a person (`response_s`), who takes the node out. Without restarts it waits for that
  person at once;
- a job that ran there when the fault showed failed in both worlds: only its restarts back on
  the node, and the person's wait after them, are the candidate's (without restarts, the person
  answering that failure takes the node out with it; the restart's own price is the wait).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from schemas.envelope import Event
from schemas.events import JobExited, JobState, JobStateChanged, RestartJob
from streams.analysis.outcomes import Outcomes, Story

HOUR_S = 3600.0
_FAULTY = frozenset({"fail", "no-gpu"})


@dataclass(frozen=True)
class Assumed:
    """What pricing a quarantine not made assumes, measured where the range can tell."""

    precision: Mapping[str, float]  # per rule: confirmed / (confirmed + false alarms)
    precision_assumed: float
    fails_after_s: float
    fails_after_words: str
    reuse: float  # the share of its nodes a restarted job runs on again
    reuse_words: str
    restarts: int | None  # the candidate's max_restarts; None: it restarts nothing
    response_s: float
    job_gpus: Mapping[str, float]  # per cluster: a job's GPUs, weighted by its nodes
    node_gpus: int
    placed_per_h: Mapping[str, float]  # per node: attempts started there per hour of the range


@dataclass(frozen=True)
class Measured:
    """The assumptions' settings (`CENTRALITY_WHATIF_*`), and the candidate's restarts."""

    precision: float
    fails_after_s: float
    reuse: float
    restarts: int | None
    response_s: float
    node_gpus: int


def assumed(judged: Outcomes, events: Sequence[Event], s: Measured, span_h: float) -> Assumed:
    """The assumptions, each measured over the range (`span_h` long) where it can be: `judged`
    is what became of its decisions, `events` its jobs' and decisions' events."""
    ran = [
        (r.ended_at - r.started_at).total_seconds()
        for r in judged.restarts
        if r.outcome == "failed_again" and r.started_at and r.ended_at
    ]
    fails_after_s = statistics.median(ran) if ran else s.fails_after_s
    words = (
        f"{fails_after_s / 60:.0f} min (median of {len(ran)} restarts that failed again)"
        if ran
        else f"{fails_after_s / 60:g} min (assumed: no restart failed again in the range)"
    )
    reuse, reuse_words = _reuse(events, s.reuse)
    return Assumed(
        precision=_precision(judged.stories),
        precision_assumed=s.precision,
        fails_after_s=fails_after_s,
        fails_after_words=words,
        reuse=reuse,
        reuse_words=reuse_words,
        restarts=s.restarts,
        response_s=s.response_s,
        job_gpus=_job_gpus(events, s.node_gpus),
        node_gpus=s.node_gpus,
        placed_per_h=_placed_per_h(events, span_h),
    )


def _placed_per_h(events: Sequence[Event], span_h: float) -> dict[str, float]:
    """Per node, the attempts that started running there, per hour of the range."""
    started = Counter(
        node
        for e in events
        if isinstance(e, JobStateChanged) and e.payload.state is JobState.RUNNING
        for node in e.payload.nodes
    )
    return {node: n / span_h for node, n in started.items()} if span_h > 0 else {}


def _reuse(events: Sequence[Event], assumed_share: float) -> tuple[float, str]:
    """The share of a restarted attempt's nodes (those its restart did not avoid) that its next
    attempt ran on again, over the range's restarts."""
    ended = {
        (e.subject, e.payload.attempt): e.payload.nodes for e in events if isinstance(e, JobExited)
    }
    began = {
        (e.subject, e.payload.attempt): e.payload.nodes
        for e in events
        if isinstance(e, JobStateChanged) and e.payload.state is JobState.RUNNING
    }
    had = again = 0
    for t in events:
        if not isinstance(t, RestartJob):
            continue
        before = set(ended.get((t.subject, t.payload.attempt), ())) - set(t.payload.exclude_nodes)
        after = began.get((t.subject, t.payload.attempt + 1))
        if before and after is not None:
            had, again = had + len(before), again + len(before & set(after))
    if not had:
        return assumed_share, f"{assumed_share:.0%} (assumed: no restart in the range ran again)"
    return again / had, f"{again / had:.0%} (of {had} nodes the range's restarts could go back to)"


def _job_gpus(events: Sequence[Event], node_gpus: int) -> dict[str, float]:
    """Per cluster, the GPUs of the job a node runs: each ended attempt's GPUs, weighted by the
    nodes it took (a big job takes more of them)."""
    weighted: dict[str, tuple[float, int]] = {}
    for e in events:
        if isinstance(e, JobExited) and e.payload.nodes:
            nodes = len(e.payload.nodes)
            gpus = e.payload.gpus or nodes * node_gpus
            total, count = weighted.get(e.cluster, (0.0, 0))
            weighted[e.cluster] = (total + gpus * nodes, count + nodes)
    return {cluster: total / count for cluster, (total, count) in weighted.items()}


def _precision(stories: list[Story]) -> dict[str, float]:
    right: dict[str, int] = {}
    judged: dict[str, int] = {}
    for s in stories:
        if s.outcome in ("confirmed", "false_alarm"):
            judged[s.rule] = judged.get(s.rule, 0) + 1
            right[s.rule] = right.get(s.rule, 0) + (s.outcome == "confirmed")
    return {rule: right.get(rule, 0) / n for rule, n in judged.items()}


@dataclass(frozen=True)
class LetThrough:
    """A node's share of a quarantine not made: capacity given back (negative), the work its
    fault goes on costing, and how each was found."""

    capacity_gpu_h: float
    work_gpu_h: float
    basis: str


def faulty(story: Story | None, rule: str, a: Assumed) -> tuple[float, str]:
    """The chance the node was faulty, and why."""
    if story is not None and (story.verdict in _FAULTY or story.failed_again_at is not None):
        return 1.0, f"faulty ({story.why})"
    if story is not None and story.outcome == "false_alarm":
        return 0.0, f"sound ({story.why})"
    if rule in a.precision:
        return a.precision[rule], f"faulty with {rule}'s measured precision {a.precision[rule]:.0%}"
    return a.precision_assumed, f"faulty with the assumed precision {a.precision_assumed:.0%}"


def let_through(
    node: str,
    cluster: str,
    running: int,
    out: tuple[float, str],
    node_gpus: int,
    chance: tuple[float, str],
    a: Assumed,
    left_h: float,
) -> LetThrough:
    """What leaving `node` in service costs: `running` is how many GPUs its fault took down
    with it (0: it was idle), `out` how long the decision kept it out and how that was found,
    `left_h` how long the range went on after it."""
    (p, why), (out_s, out_words) = chance, out
    capacity = -(1 - p) * node_gpus * out_s / HOUR_S
    words = [f"{node} {why}"]
    if p < 1:
        share = "" if p == 0 else f"{1 - p:.0%} of "
        words.append(f"gives back {share}{node_gpus} GPUs for {out_s / HOUR_S:.2f} h ({out_words})")
    cost, told = _failures(cluster, running, a) if running else _idle(node, cluster, a, left_h)
    if p > 0:
        words.append(told)
    return LetThrough(capacity, p * cost, "; ".join(words))


def _failures(cluster: str, running: int, a: Assumed) -> tuple[float, str]:
    """What a faulty node whose job its fault took down goes on failing, in GPU-hours, and in
    words."""
    if not a.restarts:
        return 0.0, "the person answering its job's failure takes it out"
    cost, told = _chain(float(running), True, a)
    return cost, f"its job ({running} GPUs) {told}"


def _idle(node: str, cluster: str, a: Assumed, left_h: float) -> tuple[float, str]:
    """What a faulty node idle when its fault showed goes on failing: the next job placed
    there, if one is before the range ends."""
    rate = a.placed_per_h.get(node, 0.0)
    if rate == 0:
        return 0.0, "no job started there over the range: none is placed there to fail"
    placed = 1 - math.exp(-rate * left_h)
    gpus = a.job_gpus.get(cluster, float(a.node_gpus))
    cost, told = _chain(gpus, False, a)
    return placed * cost, (
        f"{placed:.0%} of the time (jobs started there {rate:.2f} times an hour, {left_h:.1f} h "
        f"left) the next job placed there ({gpus:.0f} GPUs) {told}"
    )


def _chain(gpus: float, running: bool, a: Assumed) -> tuple[float, str]:
    """A job failing on the node, restarted back onto it as often as restarts go back, then
    waiting for a person: its GPU-hours, and words."""
    fails = f"each run fails {a.fails_after_words} in"
    person = f"waits {a.response_s / 60:g} min for a person, who takes the node out"
    if a.restarts is None:
        return gpus * (a.fails_after_s + a.response_s) / HOUR_S, f"fails ({fails}) and {person}"
    back = [a.reuse**i for i in range(1, a.restarts + 1)]  # each restart goes back, or not
    runs = sum(back) + (0 if running else 1)
    last = back[-1] if back else 1.0  # the chance it went back every time, then waits
    cost = gpus * (runs * a.fails_after_s + last * a.response_s) / HOUR_S
    told = (
        f"fails {runs:.1f} times there ({fails}; a restart goes back to a node it had: "
        f"{a.reuse_words}), and {last:.0%} of the time then {person}"
    )
    return cost, told
