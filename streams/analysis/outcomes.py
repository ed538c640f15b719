"""What became of each decision that takes nodes out or restarts jobs, read from what happened
next, so each rule's precision and the time each remediation step takes are measured, not told.

A rule's quarantine of a node (docs/goodput.md, "Outcomes"):

- *confirmed*: the node's benchmark failed (`fail`, `no-gpu`), or, released, it failed again (a
  failed job attempt ran on it, or a rule took it out again) within `confirm_window_s`;
- *false alarm*: its benchmark passed and, released, it did not fail within that window;
- *not drained*: the drain was refused or failed (nothing was taken out);
- *pending*: none of these yet (drain, benchmark or release not reported, or the window open).

A rule's restart of a job *held* when the next attempt ran `restart_window_s` without failing
(or ended well sooner), and *failed again* when it failed within that long of its start.

Steps of a quarantine: symptom (the earliest event the decision names as its cause) → decided →
drained (the drain succeeded) → validated (the node's next benchmark) → released (the release
succeeded, or the scheduler shows the node back in service). A step that ends before it begins
(the clocks that stamped its two ends disagree) is counted apart, never as a negative time.

A *lemon* is a node implicated in failures of more different jobs than chance allows. Chance is
one rate for the whole range: of the (job, node) pairs where a job ran on a node, the share in
which the job failed there at least once. A node where `n` jobs ran would see
Binomial(`n`, rate) of them fail by chance; it is a lemon when at least two did and the chance of
seeing as many or more is below `lemon_alpha` split over the nodes that ran jobs (Bonferroni), so
that across the fleet a healthy node is named with at most that probability.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal, TypeVar

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.envelope import Event
from schemas.events import (
    ActionFailed,
    ActionHeld,
    ActionSucceeded,
    BenchmarkCompleted,
    JobExited,
    JobState,
    JobStateChanged,
    LogSignal,
    LogSignalDetected,
    NodeStateObserved,
    QuarantineNodes,
    ReleaseNodes,
    RestartJob,
    SchedulerNodeState,
    Trigger,
)
from schemas.events.jobs import is_failure

Verdict = Literal["confirmed", "false_alarm", "not_drained", "pending"]
RestartVerdict = Literal["held", "failed_again", "not_requeued", "pending"]
STEPS = (
    "symptom_to_decided",
    "decided_to_drained",
    "drained_to_validated",
    "validated_to_released",
)
# What the report reads: decisions, what was done about them, and what happened next.
TYPES = (
    "QuarantineNodes",
    "ReleaseNodes",
    "RestartJob",
    "ActionSucceeded",
    "ActionFailed",
    "ActionHeld",
    "BenchmarkCompleted",
    "NodeStateObserved",
    "JobStateChanged",
    "JobExited",
    "LogSignalDetected",
)
_CONFIRMING_VERDICTS = frozenset({"fail", "no-gpu"})
T = TypeVar("T", bound=Trigger)


class OutcomeSettings(BaseSettings):
    """`CENTRALITY_REPORT_*`: how `centrality report` judges what became of decisions."""

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_REPORT_", extra="ignore")

    confirm_window_s: float = Field(
        default=86_400.0,
        gt=0,
        description="A quarantined node released after a passing benchmark that fails again "
        "within this long confirms the decision; one that does not was a false alarm.",
    )
    restart_window_s: float = Field(
        default=1800.0,
        gt=0,
        description="A restart held when the next attempt ran this long without failing (or "
        "ended well sooner); it failed again when that attempt failed within this long.",
    )
    lemon_alpha: float = Field(
        default=0.01,
        gt=0,
        lt=1,
        description="Chance of naming any healthy node a lemon, split over the nodes that ran "
        "jobs (Bonferroni).",
    )


@dataclass(frozen=True)
class Story:
    """A rule's decision to take one node out, and what followed."""

    trigger_id: str
    rule: str
    cluster: str
    node: str
    decided_at: datetime
    symptom_at: datetime | None
    drained_at: datetime | None
    validated_at: datetime | None
    verdict: str | None
    released_at: datetime | None
    failed_again_at: datetime | None
    outcome: Verdict
    why: str

    def step_s(self, step: str) -> float | None:
        ends = {
            "symptom_to_decided": (self.symptom_at, self.decided_at),
            "decided_to_drained": (self.decided_at, self.drained_at),
            "drained_to_validated": (self.drained_at, self.validated_at),
            "validated_to_released": (self.validated_at, self.released_at),
        }[step]
        start, end = ends
        return None if start is None or end is None else (end - start).total_seconds()


@dataclass(frozen=True)
class Restart:
    """A rule's restart of a job, and how its next attempt went."""

    trigger_id: str
    rule: str
    cluster: str
    job: str
    attempt: int
    decided_at: datetime
    requeued_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    outcome: RestartVerdict
    why: str


@dataclass(frozen=True)
class Step:
    """A remediation step's times. One whose end was stamped before its start (clocks apart:
    an agent's or a simulator's ahead of the workers') measures the clocks, not the step: it
    is counted in `out_of_order` and left out of the percentiles."""

    name: str
    count: int
    p50_s: float | None
    p99_s: float | None
    out_of_order: int = 0


@dataclass(frozen=True)
class Lemon:
    node: str
    cluster: str
    jobs_ran: int
    jobs_failed: int
    expected: float
    p_value: float


@dataclass(frozen=True)
class Outcomes:
    stories: list[Story]
    restarts: list[Restart]
    steps: list[Step]
    lemons: list[Lemon]
    failure_rate: float | None  # the chance a job that ran on a node failed there
    nodes_judged: int  # nodes that ran jobs: the Bonferroni split


def outcomes(
    events: Iterable[Event],
    since: datetime,
    until: datetime,
    observed_until: datetime,
    settings: OutcomeSettings | None = None,
) -> Outcomes:
    """Decisions of rules in [since, until), judged by everything in `events` up to
    `observed_until` (events are taken once each, whatever their order)."""
    settings = settings or OutcomeSettings()
    seen = _Index({str(e.event_id): e for e in events if e.occurred_at <= observed_until})
    stories = [
        _story(t, node, seen, observed_until, settings)
        for t in seen.decided(QuarantineNodes, since, until)
        for node in t.payload.nodes
    ]
    restarts = [
        _restart(t, seen, observed_until, settings) for t in seen.decided(RestartJob, since, until)
    ]
    rate, judged, lemons = _lemons(seen.exits(since, until), settings.lemon_alpha)
    return Outcomes(stories, restarts, steps(stories), lemons, rate, judged)


class _Index:
    """The events by what the judgements look up."""

    def __init__(self, by_id: dict[str, Event]) -> None:
        self.by_id = by_id
        ordered = sorted(by_id.values(), key=lambda e: (e.occurred_at, str(e.event_id)))
        self.triggers = [e for e in ordered if isinstance(e, Trigger)]
        self.results: dict[str, list[ActionSucceeded | ActionFailed | ActionHeld]] = {}
        for e in ordered:
            if isinstance(e, ActionSucceeded | ActionFailed | ActionHeld) and not e.payload.dry_run:
                self.results.setdefault(str(e.payload.trigger_id), []).append(e)
        self.benchmarks = [e for e in ordered if isinstance(e, BenchmarkCompleted)]
        self.releases: list[tuple[datetime, str]] = [
            (e.occurred_at, e.subject)
            for e in ordered
            if isinstance(e, NodeStateObserved) and e.payload.state is SchedulerNodeState.AVAILABLE
        ]
        for t in self.triggers:
            if isinstance(t, ReleaseNodes) and (done := self.succeeded(t)) is not None:
                self.releases += [(done.occurred_at, n) for n in t.payload.nodes]
        self.releases.sort()
        self.job_events = [e for e in ordered if isinstance(e, JobStateChanged | JobExited)]
        self.completions = {
            (e.subject, e.occurred_at)
            for e in ordered
            if isinstance(e, LogSignalDetected) and e.payload.signal is LogSignal.TRAINING_COMPLETE
        }

    def decided(self, cls: type[T], since: datetime, until: datetime) -> list[T]:
        """Decisions of rules (operators' commands are people's, not a rule's)."""
        return [
            t
            for t in self.triggers
            if isinstance(t, cls) and t.payload.operator is None and since <= t.occurred_at < until
        ]

    def succeeded(self, trigger: Trigger) -> ActionSucceeded | None:
        found = self.results.get(str(trigger.event_id), [])
        return next((r for r in found if isinstance(r, ActionSucceeded)), None)

    def failed(self, trigger: Trigger) -> tuple[str, str] | None:
        """How the action was not done (`refused`, `failed`, `held`) and why; None: it was, or
        nothing was reported."""
        found = self.results.get(str(trigger.event_id), [])
        for r in found:
            if isinstance(r, ActionHeld):
                return "held", r.payload.said
            if isinstance(r, ActionFailed):
                return ("refused" if r.payload.refused else "failed"), r.payload.error
        return None

    def exits(self, since: datetime, until: datetime) -> list[JobExited]:
        return [
            e
            for e in self.job_events
            if isinstance(e, JobExited) and since <= e.occurred_at < until
        ]

    def node_failures(self, node: str, after: datetime) -> list[datetime]:
        """When `node` failed after `after`: a failed job attempt on it, or a rule taking it
        out."""
        failed = [
            e.occurred_at
            for e in self.job_events
            if isinstance(e, JobExited) and is_failure(e.payload) and node in e.payload.nodes
        ]
        taken = [
            t.occurred_at
            for t in self.triggers
            if isinstance(t, QuarantineNodes)
            and t.payload.operator is None
            and node in t.payload.nodes
        ]
        return sorted(at for at in (*failed, *taken) if at > after)


def _story(
    t: QuarantineNodes, node: str, seen: _Index, observed_until: datetime, s: OutcomeSettings
) -> Story:
    causes = [seen.by_id[str(c)].occurred_at for c in t.payload.caused_by if str(c) in seen.by_id]
    story = Story(
        trigger_id=str(t.event_id),
        rule=t.payload.rule,
        cluster=t.cluster,
        node=node,
        decided_at=t.occurred_at,
        symptom_at=min(causes, default=None),
        drained_at=None,
        validated_at=None,
        verdict=None,
        released_at=None,
        failed_again_at=None,
        outcome="pending",
        why="drain not reported",
    )
    drained = seen.succeeded(t)
    if drained is None:
        refused = seen.failed(t)
        if refused is None:
            return story
        how, error = refused
        return replace(story, outcome="not_drained", why=f"drain {how}: {error}")
    bench = next(
        (b for b in seen.benchmarks if b.subject == node and b.occurred_at >= drained.occurred_at),
        None,
    )
    after = bench.occurred_at if bench else drained.occurred_at
    released_at = next((at for at, n in seen.releases if n == node and at >= after), None)
    story = replace(
        story,
        drained_at=drained.occurred_at,
        validated_at=bench.occurred_at if bench else None,
        verdict=bench.payload.verdict if bench else None,
        released_at=released_at,
    )
    return _judged(story, bench, seen, observed_until, s)


def _judged(
    story: Story,
    bench: BenchmarkCompleted | None,
    seen: _Index,
    observed_until: datetime,
    s: OutcomeSettings,
) -> Story:
    """A drained node's story, told by what followed: its benchmark's verdict, a failure soon
    after its release, or how long it has been watched since."""
    released_at = story.released_at
    if bench is not None and bench.payload.verdict in _CONFIRMING_VERDICTS:
        return replace(story, outcome="confirmed", why=f"benchmark {bench.payload.verdict}")
    if released_at is not None:
        window = timedelta(seconds=s.confirm_window_s)
        failures = seen.node_failures(story.node, released_at)
        again = [at for at in failures if at <= released_at + window]
        if again:
            after_min = (again[0] - released_at).total_seconds() / 60
            return replace(
                story,
                failed_again_at=again[0],
                outcome="confirmed",
                why=f"failed again {after_min:.0f} min after its release",
            )
    if bench is None:
        return replace(story, why="no benchmark verdict yet")
    if bench.payload.verdict != "pass":
        return replace(story, why=f"benchmark {bench.payload.verdict}: nothing said of the node")
    if released_at is None:
        return replace(story, why="benchmark passed; not released yet")
    watched_until = released_at + timedelta(seconds=s.confirm_window_s)
    if watched_until > observed_until:
        return replace(story, why=f"benchmark passed; watched until {watched_until.isoformat()}")
    hours = s.confirm_window_s / 3600
    return replace(
        story,
        outcome="false_alarm",
        why=f"benchmark passed; no failure within {hours:g} h of its release",
    )


def _restart(t: RestartJob, seen: _Index, observed_until: datetime, s: OutcomeSettings) -> Restart:
    job, nxt = t.subject, t.payload.attempt + 1
    requeued = seen.succeeded(t)
    started = next(
        (
            e.occurred_at
            for e in seen.job_events
            if isinstance(e, JobStateChanged)
            and e.subject == job
            and e.payload.attempt == nxt
            and e.payload.state is JobState.RUNNING
        ),
        None,
    )
    exit_ = next(
        (
            e
            for e in seen.job_events
            if isinstance(e, JobExited) and e.subject == job and e.payload.attempt == nxt
        ),
        None,
    )
    restart = Restart(
        trigger_id=str(t.event_id),
        rule=t.payload.rule,
        cluster=t.cluster,
        job=job,
        attempt=t.payload.attempt,
        decided_at=t.occurred_at,
        requeued_at=requeued.occurred_at if requeued else None,
        started_at=started,
        ended_at=exit_.occurred_at if exit_ else None,
        outcome="pending",
        why="requeue not reported",
    )
    window_s = s.restart_window_s
    if requeued is None:
        refused = seen.failed(t)
        if refused is None:
            return restart
        return replace(restart, outcome="not_requeued", why=refused[1])
    if exit_ is not None and is_failure(exit_.payload):
        ran_min = (exit_.occurred_at - (started or requeued.occurred_at)).total_seconds() / 60
        if ran_min * 60 <= window_s:
            why = f"attempt {nxt} failed after {ran_min:.0f} min"
            return replace(restart, outcome="failed_again", why=why)
        return replace(restart, outcome="held", why=f"attempt {nxt} ran {ran_min:.0f} min")
    if exit_ is not None and (
        exit_.payload.state is JobState.SUCCEEDED
        or any(j == job and at <= exit_.occurred_at for j, at in seen.completions)
    ):
        why = f"attempt {nxt} ended {exit_.payload.state.value}"
        return replace(restart, outcome="held", why=why)
    if started is not None and (observed_until - started).total_seconds() >= window_s:
        why = f"attempt {nxt} ran {window_s / 60:g} min without failing"
        return replace(restart, outcome="held", why=why)
    return replace(restart, why=f"attempt {nxt} not judged yet")


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def steps(stories: Sequence[Story]) -> list[Step]:
    out = []
    for name in STEPS:
        timed = [s for st in stories if (s := st.step_s(name)) is not None]
        took = [s for s in timed if s >= 0]
        p50, p99 = percentile(took, 0.5), percentile(took, 0.99)
        out.append(Step(name, len(took), p50, p99, len(timed) - len(took)))
    return out


def _lemons(exits: Sequence[JobExited], alpha: float) -> tuple[float | None, int, list[Lemon]]:
    ran: dict[str, set[str]] = {}
    failed: dict[str, set[str]] = {}
    cluster: dict[str, str] = {}
    for e in exits:
        for node in e.payload.nodes:
            ran.setdefault(node, set()).add(e.subject)
            cluster[node] = e.cluster
            if is_failure(e.payload):
                failed.setdefault(node, set()).add(e.subject)
    pairs = sum(len(jobs) for jobs in ran.values())
    if not pairs:
        return None, 0, []
    rate = sum(len(jobs) for jobs in failed.values()) / pairs
    threshold = alpha / len(ran)
    lemons = []
    for node, jobs in ran.items():
        k = len(failed.get(node, ()))
        if k < 2:
            continue
        p_value = binomial_tail(len(jobs), rate, k)
        if p_value < threshold:
            lemons.append(Lemon(node, cluster[node], len(jobs), k, len(jobs) * rate, p_value))
    return rate, len(ran), sorted(lemons, key=lambda x: (x.p_value, x.node))


def binomial_tail(n: int, p: float, k: int) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0 if k <= n else 0.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [
        math.lgamma(n + 1)
        - math.lgamma(i + 1)
        - math.lgamma(n - i + 1)
        + i * log_p
        + (n - i) * log_q
        for i in range(k, n + 1)
    ]
    if not terms:
        return 0.0
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))
