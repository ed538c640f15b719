"""Each decision a candidate makes otherwise than was made, priced in GPU-hours.

A decision is priced as what carrying it out does to GPU time (docs/goodput.md, "Pricing a
decision"); a positive price is GPU time lost, a negative one GPU time saved:

- `QuarantineNodes`, capacity removed: each node's GPUs times the time it is out of service. For a
  decision that was carried out, drained → released as recorded (the repair time, `repair_s`,
  where the story never finished); for one only the candidate makes, the median drained →
  released of the range's recorded stories (the repair time where none finished). One the
  candidate does not make gives back only what a sound node was out, and costs what a faulty
  one goes on failing (`streams.analysis.whatif.through`).
- `RestartJob`, work: an attempt that failed waits for a person otherwise: a restart saves its
  GPUs times `response_s` (one whose requeue was never carried out saved nothing). An attempt
  that ended well without its completion line (a restart only `on_success_without_marker:
  restart` asks for) redoes its work since the last checkpoint: its GPUs times that time, lost.
- `CancelJob`, idle allocation ended: the job's GPUs times the time from the decision to the job's
  end (the range's end where it did not end, or where the cancel recorded was what ended it),
  saved.
- Anything else (notifications, a story's later steps, priced with its quarantine) costs none.

A decision only the candidate makes (`new`) adds its price; one it does not make (`missing`)
takes the recorded one's away; a `changed` one adds the difference.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.envelope import Event
from schemas.events import (
    CancelJob,
    CheckpointSaved,
    JobExited,
    JobState,
    JobStateChanged,
    QuarantineNodes,
    RestartJob,
    Trigger,
)
from streams.analysis.outcomes import Restart, Story, outcomes
from streams.analysis.replay.reasons import Why
from streams.analysis.replay.rerun import Decision
from streams.analysis.whatif.through import Assumed, faulty, let_through
from streams.analysis.whatif.world import the_candidate_s

HOUR_S = 3600.0


class PricingSettings(BaseSettings):
    """`CENTRALITY_WHATIF_*`: the assumptions `centrality whatif` prices decisions under."""

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_WHATIF_", extra="ignore")

    response_s: float = Field(
        default=1800.0,
        ge=0,
        description="How long a job left dead waits for a person to restart it: what a restart "
        "saves.",
    )
    repair_s: float = Field(
        default=86_400.0,
        gt=0,
        description="How long a node taken out stays out when its story never finished (kept "
        "by a failed benchmark, or no story recorded to learn from): hands-on repair.",
    )
    node_gpus: int = Field(
        default=8, ge=1, description="GPUs of a node (or a job's node) no event counted."
    )
    precision: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="The share of a rule's quarantines taken as right where the range judged "
        "none of them (no benchmark verdict, no failure after a release).",
    )
    reuse: float = Field(
        default=1.0,
        ge=0,
        le=1,
        description="The share of its nodes a restarted job runs on again, where no restart in "
        "the range ran again to tell.",
    )
    fails_after_s: float = Field(
        default=600.0,
        gt=0,
        description="How long a job placed on a faulty node runs before it fails, where no "
        "restart in the range failed again to tell.",
    )


@dataclass(frozen=True)
class Price:
    capacity_gpu_h: float = 0.0
    work_gpu_h: float = 0.0
    idle_gpu_h: float = 0.0
    basis: str = ""

    @property
    def gpu_h(self) -> float:
        return self.capacity_gpu_h + self.work_gpu_h + self.idle_gpu_h

    def minus(self, other: Price) -> Price:
        basis = "; ".join(
            b for b in (self.basis, f"less: {other.basis}" if other.basis else "") if b
        )
        return Price(
            self.capacity_gpu_h - other.capacity_gpu_h,
            self.work_gpu_h - other.work_gpu_h,
            self.idle_gpu_h - other.idle_gpu_h,
            basis,
        )


@dataclass(frozen=True)
class Priced:
    decision: Decision
    price: Price
    cluster: str
    gpu_model: str | None


@dataclass
class Facts:
    """What pricing needs to know of history, from its events."""

    stories: dict[tuple[str, str], Story]  # recorded rule quarantines, by (trigger id, node)
    restarts: dict[str, Restart]  # recorded rule restarts, by trigger id
    by_id: dict[str, Event]
    jobs: dict[str, list[Event]]  # each job's events, in event time order
    node_gpus: Mapping[str, int] = field(default_factory=dict)
    node_models: Mapping[str, str] = field(default_factory=dict)

    @property
    def typical_out_s(self) -> tuple[float | None, int]:
        """Median drained → released of the recorded stories that finished, and how many."""
        took = [
            (s.released_at - s.drained_at).total_seconds()
            for s in self.stories.values()
            if s.drained_at is not None and s.released_at is not None
        ]
        return (statistics.median(took) if took else None), len(took)


def gather(
    events: Iterable[Event],
    since: datetime,
    until: datetime,
    observed_until: datetime,
    node_gpus: Mapping[str, int] | None = None,
    node_models: Mapping[str, str] | None = None,
) -> Facts:
    found = list(events)
    judged = outcomes(found, since, until, observed_until)
    jobs: dict[str, list[Event]] = {}
    for e in sorted(found, key=lambda e: e.occurred_at):
        if isinstance(e, JobExited | JobStateChanged | CheckpointSaved):
            jobs.setdefault(e.subject, []).append(e)
    return Facts(
        {(s.trigger_id, s.node): s for s in judged.stories},
        {r.trigger_id: r for r in judged.restarts},
        {str(e.event_id): e for e in found},
        jobs,
        node_gpus or {},
        node_models or {},
    )


def price_differences(
    decisions: Sequence[Decision],
    whys: Mapping[str, Why],
    facts: Facts,
    until: datetime,
    settings: PricingSettings,
    assumed: Assumed,
) -> list[Priced]:
    """The differences the candidate makes, priced; those that would differ under any rules
    (`NOT_THE_RULES`: a range's edges, people's commands) are not the candidate's and are left
    out."""
    pricing = _Pricing(
        facts,
        until,
        settings,
        _outages([d.then for d in decisions if d.then is not None], facts, settings),
        _outages([d.now for d in decisions if d.now is not None], facts, settings),
        assumed,
    )
    mine = [d for d in decisions if d.status != "same" and the_candidate_s(whys.get(d.trigger_id))]
    instead = _instead(mine, assumed.fails_after_s)
    taken = {str(t.event_id) for t in instead.values()}
    out = []
    for d in mine:
        if d.trigger_id in taken:
            continue  # priced with the decision it stands in for
        timed = timed_price(d)
        if timed is not None:
            out.append(Priced(d, timed, d.trigger.cluster, pricing.model(d.trigger)))
            continue
        if d.status == "missing" and isinstance(d.then, QuarantineNodes):
            price = pricing.not_made(d.then, instead.get(d.trigger_id))
            out.append(Priced(d, price, d.trigger.cluster, pricing.model(d.trigger)))
            continue
        if d.status == "changed" and pricing.never_done(d.then):
            continue  # the same action, never carried out either way
        now = pricing.of(d.now, recorded=False) if d.now is not None else Price()
        then = pricing.of(d.then, recorded=True) if d.then is not None else Price()
        price = now.minus(then)
        if d.status == "missing":
            price = replace(price, basis=f"not made: {then.basis}" if then.basis else "")
        elif d.status == "changed" and then.basis:
            price = replace(price, basis=f"now {now.basis}; then {then.basis}")
        out.append(Priced(d, price, d.trigger.cluster, pricing.model(d.trigger)))
    return out


def timed_price(d: Decision) -> Price | None:
    """A decision timed to a job's checkpoints (`slow_node`) priced by its own figures: what its
    way was expected to cost the job against the other world's way, leaving the node where that
    world decided nothing. The quarantine that carries out a plan is priced with the plan. None:
    not a timed decision."""
    then, now = (t.payload.timing if t is not None else None for t in (d.then, d.now))
    timing = now or then
    if timing is None:
        return None
    carried = d.trigger.type == "QuarantineNodes" and timing.chosen in ("ask", "at_checkpoint")
    if carried:
        return Price(basis="carries out its plan: priced with it")
    figures = timing.gpu_h.of()
    cost_now = figures[now.chosen] if now is not None else figures["leave"]
    cost_then = figures[then.chosen] if then is not None else figures["leave"]
    said = {x: (t.chosen if t else "leave") for x, t in (("now", now), ("then", then))}
    return Price(
        work_gpu_h=cost_now - cost_then,
        basis=f"{timing.job_id}: {said['now']} {cost_now:.1f} GPU-h against "
        f"{said['then']} {cost_then:.1f}, as the rule weighed them",
    )


def _instead(decisions: Sequence[Decision], soon_s: float) -> dict[str, QuarantineNodes]:
    """Per quarantine the candidate does not make, one it makes instead: of the same nodes, by
    another rule, no later than `soon_s` after it (before a job could fail there)."""
    made = [d.now for d in decisions if d.status == "new" and isinstance(d.now, QuarantineNodes)]
    out: dict[str, QuarantineNodes] = {}
    for d in decisions:
        t = d.then
        if d.status != "missing" or not isinstance(t, QuarantineNodes):
            continue
        for n in made:
            late_s = (n.occurred_at - t.occurred_at).total_seconds()
            if set(n.payload.nodes) == set(t.payload.nodes) and 0 <= late_s <= soon_s:
                out[d.trigger_id] = n
                made.remove(n)
                break
    return out


Outages = dict[tuple[str, str], tuple[float, str]]


def _outages(triggers: Sequence[Trigger], facts: Facts, s: PricingSettings) -> Outages:
    """Per (decision, node), the seconds out of service the decision adds in its world beyond
    what the world's earlier decisions took the node out for already (a node is out once at a
    time), with the words saying how that time was found."""
    typical_s, stories = facts.typical_out_s
    covered: dict[str, datetime] = {}
    out: Outages = {}
    quarantines = [t for t in triggers if isinstance(t, QuarantineNodes)]
    for t in sorted(quarantines, key=lambda t: (t.occurred_at, str(t.event_id))):
        for node in t.payload.nodes:
            story = facts.stories.get((str(t.event_id), node))
            if story is not None and story.drained_at is None:
                out[(str(t.event_id), node)] = (0.0, f"{node} never drained")
                continue
            if story is not None and story.drained_at is not None:
                start = story.drained_at
                if story.released_at is not None:
                    end, basis = story.released_at, f"{node} drained → released, recorded"
                else:
                    end = start + timedelta(seconds=s.repair_s)
                    basis = f"{node} never released: repair time"
            else:
                start = t.occurred_at
                if typical_s is not None:
                    end = start + timedelta(seconds=typical_s)
                    basis = f"{node}: median drained → released of {stories} recorded stories"
                else:
                    end = start + timedelta(seconds=s.repair_s)
                    basis = f"{node}: repair time (no recorded story ended)"
            begin = max(start, covered.get(node, start))
            if begin > start:
                basis += ", beyond an earlier decision's"
            covered[node] = max(end, covered.get(node, end))
            out[(str(t.event_id), node)] = (max(0.0, (end - begin).total_seconds()), basis)
    return out


@dataclass(frozen=True)
class _Pricing:
    facts: Facts
    until: datetime
    s: PricingSettings
    then: Outages  # what was decided
    now: Outages  # what the candidate decides
    assumed: Assumed

    def of(self, t: Trigger, *, recorded: bool) -> Price:
        if isinstance(t, QuarantineNodes):
            return self._quarantine(t, recorded)
        if isinstance(t, RestartJob):
            return self._restart(t, recorded)
        if isinstance(t, CancelJob):
            return self._cancel(t, recorded)
        return Price()

    def gpus(self, node: str) -> int:
        return self.facts.node_gpus.get(node) or self.s.node_gpus

    def model(self, t: Trigger) -> str | None:
        nodes = list(getattr(t.payload, "nodes", ())) or self._job_nodes(t.subject)
        return next((self.facts.node_models[n] for n in nodes if n in self.facts.node_models), None)

    def _quarantine(self, t: QuarantineNodes, recorded: bool) -> Price:
        outages = self.then if recorded else self.now
        capacity, bases = 0.0, []
        for node in t.payload.nodes:
            out_s, basis = outages[(str(t.event_id), node)]
            gpus = self.gpus(node)
            capacity += gpus * out_s / HOUR_S
            bases.append(f"{basis}, {gpus} GPUs for {out_s / HOUR_S:.2f} h")
        return Price(capacity_gpu_h=capacity, basis="; ".join(bases))

    def never_done(self, t: Trigger | None) -> bool:
        """A recorded restart whose requeue was refused or failed."""
        done = self.facts.restarts.get(str(t.event_id)) if t is not None else None
        return done is not None and done.outcome == "not_requeued"

    def not_made(self, t: QuarantineNodes, instead: QuarantineNodes | None = None) -> Price:
        """A quarantine that was decided and the candidate does not make: per node, what
        leaving it in service gives back and goes on costing; or, where the candidate takes the
        same nodes out by another rule soon after (`instead`), nothing."""
        if instead is not None:  # the same fault: out as long, before a job could fail there
            late_s = (instead.occurred_at - t.occurred_at).total_seconds()
            return Price(basis=f"taken out by {instead.payload.rule} instead, {late_s:.0f} s later")
        capacity, work, bases = 0.0, 0.0, []
        running = sum(self._job_gpus(job) for job in t.payload.jobs)
        left_h = max(0.0, (self.until - t.occurred_at).total_seconds() / HOUR_S)
        for node in t.payload.nodes:
            out = self.then[(str(t.event_id), node)]
            story = self.facts.stories.get((str(t.event_id), node))
            if story is None or story.drained_at is None:
                bases.append(f"{node} never drained: nothing was done")
                continue
            chance = faulty(story, t.payload.rule, self.assumed)
            through = let_through(
                node, t.cluster, running, out, self.gpus(node), chance, self.assumed, left_h
            )
            capacity += through.capacity_gpu_h
            work += through.work_gpu_h
            bases.append(through.basis)
        return Price(
            capacity_gpu_h=capacity, work_gpu_h=work, basis="not made: " + "; ".join(bases)
        )

    def _job_gpus(self, job: str) -> int:
        for e in reversed(self.facts.jobs.get(job, [])):
            if isinstance(e, JobExited | JobStateChanged) and e.payload.nodes:
                gpus = getattr(e.payload, "gpus", None)
                return gpus or sum(self.gpus(n) for n in e.payload.nodes)
        return 0

    def _restart(self, t: RestartJob, recorded: bool) -> Price:
        done = self.facts.restarts.get(str(t.event_id)) if recorded else None
        if done is not None and self.never_done(t):
            return Price(basis=f"its requeue was not carried out ({done.why}): nothing to undo")
        exit_ = self._exit(t)
        if exit_ is None:
            return Price(basis="the attempt's exit is not in history: not priced")
        p = exit_.payload
        gpus = p.gpus or sum(self.gpus(n) for n in p.nodes) or self.s.node_gpus
        ended_well = p.state is JobState.SUCCEEDED or (
            p.state is JobState.UNKNOWN and p.exit_code == 0
        )
        if not ended_well:
            hours = self.s.response_s / HOUR_S
            return Price(
                work_gpu_h=-gpus * hours,
                basis=f"restarted at once, not after a person's {hours:g} h: {gpus} GPUs",
            )
        redo_s = (exit_.occurred_at - self._progress_before(t.subject, exit_)).total_seconds()
        return Price(
            work_gpu_h=gpus * redo_s / HOUR_S,
            basis=f"ended well: {gpus} GPUs redo {redo_s / HOUR_S:.2f} h since its last checkpoint",
        )

    def _cancel(self, t: CancelJob, recorded: bool) -> Price:
        later = [
            e
            for e in self.facts.jobs.get(t.subject, [])
            if isinstance(e, JobExited) and e.occurred_at >= t.occurred_at
        ]
        end = self.until if recorded or not later else min(later[0].occurred_at, self.until)
        nodes = self._job_nodes(t.subject)
        gpus = (
            next((e.payload.gpus for e in reversed(later) if e.payload.gpus), 0)
            or sum(self.gpus(n) for n in nodes)
            or self.s.node_gpus
        )
        held_h = max(0.0, (end - t.occurred_at).total_seconds()) / HOUR_S
        until = "the range's end" if end == self.until else "its recorded end"
        return Price(
            idle_gpu_h=-gpus * held_h,
            basis=f"{gpus} idle GPUs released {held_h:.2f} h before {until}",
        )

    def _exit(self, t: RestartJob) -> JobExited | None:
        for cause in t.payload.caused_by:
            found = self.facts.by_id.get(str(cause))
            if isinstance(found, JobExited):
                return found
        return next(
            (
                e
                for e in self.facts.jobs.get(t.subject, [])
                if isinstance(e, JobExited) and e.payload.attempt == t.payload.attempt
            ),
            None,
        )

    def _progress_before(self, job: str, exit_: JobExited) -> datetime:
        """The last checkpoint before the exit, or the attempt's start (the exit where neither
        is in history)."""
        marks = [
            e.occurred_at
            for e in self.facts.jobs.get(job, [])
            if e.occurred_at <= exit_.occurred_at
            and (
                isinstance(e, CheckpointSaved)
                or (
                    isinstance(e, JobStateChanged)
                    and e.payload.attempt == exit_.payload.attempt
                    and e.payload.state is JobState.RUNNING
                )
            )
        ]
        return max(marks, default=exit_.occurred_at)

    def _job_nodes(self, job: str) -> list[str]:
        for e in reversed(self.facts.jobs.get(job, [])):
            if isinstance(e, JobExited | JobStateChanged) and e.payload.nodes:
                return list(e.payload.nodes)
        return []
