"""The Node: what the stream knows about one node, folded purely from node events and from
what the brain forwards to it (job attempts seen there, decisions about it, action results).

State follows outcomes, not decisions: a rule's `QuarantineNodes` makes the node `suspect`
(drain requested); it is `quarantined` only once the drain's `ActionSucceeded` comes back, and in
service again once a release succeeded (see `streams.state.story`). What the scheduler reports
(`NodeStateObserved`) is kept beside it: a node drained or down by someone else.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, fields, replace
from datetime import datetime
from functools import singledispatch
from operator import attrgetter

from pydantic import BaseModel, ConfigDict, Field

from schemas.envelope import Event
from schemas.events import (
    BenchmarkCompleted,
    GpuSampled,
    GpuXidObserved,
    HealthStatus,
    NodeFactsObserved,
    NodeHealthChecked,
    NodeHeartbeat,
    NodeStateObserved,
    SchedulerNodeState,
)
from schemas.events.actions import BenchmarkCompletedPayload
from schemas.events.nodes import DRAIN_REASON_PREFIX, NodeStateObservedPayload
from schemas.events.triggers import Severity
from schemas.groups import NODES, Facts
from schemas.xids import XidResolution, resolution_of
from streams.state.bounds import (
    CHECK_NAME_CHARS_MAX,
    GPUS_KEPT,
    HEALTH_CHECKS_KEPT,
    HEALTH_MESSAGE_CHARS_MAX,
    ID_CHARS_MAX,
    JOBS_PER_NODE_KEPT,
    XIDS_COUNTED,
    clip,
)
from streams.state.dispatch import by_type
from streams.state.internal import (
    NodeActionReported,
    NodeActionReportedPayload,
    NodeDecided,
    NodeDecidedPayload,
    NodeJobObserved,
    NodeJobPacedPayload,
    NodePeerNamed,
)
from streams.state.judge import Judged, behind_fleet, judge, model_of
from streams.state.pace import SlowPlan
from streams.state.slowness import RISES_SEEN, SlowSign, benchmarked, quiet, signs_after
from streams.state.stamp import Entity, stamped
from streams.state.story import (
    RUNG_STAGES,
    VERDICT_STAGES,
    NodeStatus,
    RungTried,
    Stage,
    Story,
    StoryEnd,
)
from streams.state.windows import Failure, record

XIDS_KEPT = 32
LOST_RULE = "heartbeat_lost"  # the rule whose decision marks a node unreachable
# A GPU at or below this utilisation does no work (NVML reports whole percents; 1% is noise).
IDLE_UTILIZATION_PCT = 1.0
HEALTH_FAILURES_KEPT = 64
PEERS_NAMED_KEPT = 32  # evidence enough: a failing peer is named by every rank talking to it
RUNGS_KEPT = 32  # a ladder is a handful of rungs; a longer one keeps its latest


class Health(BaseModel):
    model_config = ConfigDict(frozen=True)

    status: HealthStatus
    message: str = ""
    at: datetime


@dataclass(frozen=True, slots=True)
class GpuCounters:
    """Highest error counters seen per GPU (NVML's volatile counters only grow until reboot).

    A slotted dataclass, not a model: a node keeps one per GPU whose counters ever rose, so a
    fleet whose GPUs all count corrected errors holds one per GPU. As a frozen model each took
    ~600 bytes in the worker's decoded states (9.8 MB for 2,000 nodes of 8 GPUs), as this ~80.
    Pydantic reads and writes it as the same JSON object the model was."""

    ecc_single_bit: int = 0
    ecc_double_bit: int = 0
    remapped_rows_correctable: int = 0
    remapped_rows_uncorrectable: int = 0
    retired_pages: int = 0
    ecc_double_bit_rose_at: datetime | None = None  # the sample where double-bit errors last rose


class HealthFailure(BaseModel):
    """A CRITICAL health-check result, kept for the repeated_health_failures rule."""

    model_config = ConfigDict(frozen=True)

    check: str
    at: datetime
    event_id: uuid.UUID


class PeerNamed(BaseModel):
    """A job's log line named this node as the other end that failed (`streams.state.peers`)."""

    model_config = ConfigDict(frozen=True)

    job_id: str
    by: str | None  # the node whose line it was
    at: datetime
    event_id: uuid.UUID


class JobHere(BaseModel):
    """The attempt of a job running on this node, and since when (event time)."""

    model_config = ConfigDict(frozen=True)

    attempt: int
    since: datetime


class XidSeen(BaseModel):
    model_config = ConfigDict(frozen=True)

    xid: int
    gpu: int
    at: datetime
    event_id: uuid.UUID
    # NVIDIA's recommended resolution (schemas.xids), as the message refines it; None in states
    # written before it was kept (the code alone then decides).
    resolution: str | None = None

    @property
    def resolved_by(self) -> XidResolution:
        return XidResolution(self.resolution) if self.resolution else resolution_of(self.xid)


class Lost(BaseModel):
    """No heartbeat for longer than the node's limit (rule `heartbeat_lost` decided so)."""

    model_config = ConfigDict(frozen=True)

    since: datetime  # the last heartbeat
    why: str
    severity: Severity = "warning"


class NodeFacts(BaseModel):
    """What the node is (agent and scheduler reports, merged): node groups select by these."""

    model_config = ConfigDict(frozen=True)

    gpu_model: str | None = None
    gpu_count: int | None = None
    gpu_memory_bytes: int | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    gpu_serials: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    labels: dict[str, str] = Field(default_factory=dict)
    switch: str | None = None
    # Per field above: the event time of the report it holds. The agent and the scheduler's
    # watcher report different fields, and a report can come late (a spool sent after an
    # outage, a redelivery): a field only takes a report newer than the one it holds.
    reported_at: dict[str, datetime] = Field(default_factory=dict)


class SchedulerView(BaseModel):
    """The node as its scheduler last reported it."""

    model_config = ConfigDict(frozen=True)

    state: SchedulerNodeState
    raw_state: str
    reason: str | None = None
    at: datetime


OUT_OF_SERVICE = frozenset(
    {SchedulerNodeState.DRAINING, SchedulerNodeState.DRAINED, SchedulerNodeState.DOWN}
)
TAKEN_OUT = frozenset({SchedulerNodeState.DRAINING, SchedulerNodeState.DRAINED})


def ours(reason: str | None) -> bool:
    """Whether a scheduler's drain reason is one of Centrality's (no reason: cannot tell, so
    taken as ours, e.g. a cordon, which carries none)."""
    return reason is None or reason.startswith(DRAIN_REASON_PREFIX)


class Node(Entity):
    model_config = ConfigDict(frozen=True)

    node_id: str
    cluster: str
    health: dict[str, Health] = Field(default_factory=dict)
    health_failures: tuple[HealthFailure, ...] = ()  # CRITICAL results, event time, bounded
    last_heartbeat_at: datetime | None = None
    heartbeat_interval_s: float | None = None
    gpu_count: int | None = None  # as the agent's heartbeats say
    facts: NodeFacts = NodeFacts()
    gpus: dict[int, GpuCounters] = Field(default_factory=dict)  # GPUs with any error seen
    xids: tuple[XidSeen, ...] = ()
    xid_counts: dict[int, int] = Field(default_factory=dict)
    story: Story | None = None  # the current (or last unfinished) quarantine story
    episodes: int = 0  # quarantine stories that ended (released, resumed or drain failed)
    ended: StoryEnd | None = None  # how the last story ended, when people ended it
    story_ended_at: datetime | None = None  # event time the last story ended
    scheduler: SchedulerView | None = None
    last_benchmark_verdict: str | None = None
    last_benchmark_at: datetime | None = None
    jobs: dict[str, JobHere] = Field(default_factory=dict)  # job id → its attempt running here
    # Per GPU sampled: since when it idles (None: busy). Written only when a GPU turns idle or
    # busy, so steady telemetry costs no table write.
    gpu_idle_since: dict[int, datetime | None] = Field(default_factory=dict)
    failures: tuple[Failure, ...] = ()  # failed attempts that ran here, event time
    named_as_peer: tuple[PeerNamed, ...] = ()  # by jobs' log lines, the latest kept
    lost: Lost | None = None  # heartbeats stopped: unreachable until one comes again
    slow: dict[str, SlowSign] = Field(default_factory=dict)  # slow but alive (`slowness`)
    # How fast the jobs running here go, as each told it (`job_pace`), and the jobs this node is
    # to leave at their next checkpoint (`slow_node`'s own plans).
    pace: dict[str, NodeJobPacedPayload] = Field(default_factory=dict)
    slow_plans: dict[str, SlowPlan] = Field(default_factory=dict)
    # Incidents (streams.state.incidents): the open incident the node belongs to and its state
    # as last told to it; a fault told to the book whose incident is not named yet.
    incident: str | None = None
    incident_told: str | None = None
    fault_told: str | None = None

    @classmethod
    def new(cls, event: Event) -> Node:
        return cls(node_id=event.subject, cluster=event.cluster)

    @property
    def key(self) -> str:
        return self.node_id

    @property
    def group_facts(self) -> Facts:
        """What node groups (rule scopes, ladders) select it by."""
        f = self.facts
        return Facts(
            NODES,
            self.cluster,
            node=self.node_id,
            gpu_model=f.gpu_model,
            partitions=f.partitions,
            features=f.features,
            labels=f.labels,
        )

    def episode(self, at: datetime) -> str:
        """Names the quarantine episode a decision at `at` belongs to (one decision of each kind
        per episode): the story under way, by when it was decided, else the one the decision
        begins, by `at`. An instant, not a count of the stories before it: a replay whose
        warm-up begins after them names the episode as the live worker did."""
        story = self.story
        began = (
            story.decided_at if story is not None and story.stage is not Stage.DRAIN_FAILED else at
        )
        return f"q{began.isoformat()}"

    @property
    def status(self) -> NodeStatus:
        return NodeStatus.IN_SERVICE if self.story is None else self.story.status

    @property
    def quarantined(self) -> bool:
        """Drained by Centrality (the drain succeeded), until a release succeeds."""
        return self.status is NodeStatus.QUARANTINED

    @property
    def idle_since(self) -> datetime | None:
        """Since when every GPU sampled here idles; None while any works (or none was seen)."""
        since = self.gpu_idle_since.values()
        if not since or any(s is None for s in since):
            return None
        return max(s for s in since if s is not None)

    @property
    def may_quarantine(self) -> bool:
        """A rule may ask for the node's drain: no story is under way (a failed drain ended one)
        or only a batched drain that waits its turn, and nobody else took the node out (what
        people drained, Centrality never releases)."""
        no_story = self.story is None or self.story.stage is Stage.DRAIN_FAILED
        return (no_story or self.waiting_turn) and not self.drained_by_others

    def may_quarantine_at(self, at: datetime) -> bool:
        """`may_quarantine`, for a fault that happened at `at`: not one from before the last
        story ended (a failed drain or a release). Stamped while that story was under way and
        folded after its end (history arriving late, a spool), it was that story's fault, as a
        replay, folding in event time, finds it."""
        story, ended = self.story, self.story_ended_at
        if story is not None:  # a failed drain ended it; one under way may wait its turn
            ended = story.since if story.stage is Stage.DRAIN_FAILED else None
        return self.may_quarantine and (ended is None or at > ended)

    @property
    def waiting_turn(self) -> bool:
        """Its drain was asked for in a batch and has not happened yet."""
        story = self.story
        return story is not None and story.stage is Stage.DRAIN_REQUESTED and story.batched

    @property
    def out_of_service_by_scheduler(self) -> bool:
        """Drained or down by someone else, as far as the scheduler says."""
        return self.scheduler is not None and self.scheduler.state in OUT_OF_SERVICE

    @property
    def drained_by_others(self) -> bool:
        """Drained in the scheduler by someone else (a reason that is not one of ours)."""
        view = self.scheduler
        return view is not None and view.state in TAKEN_OUT and not ours(view.reason)


def apply(state: Node | None, event: Event) -> Node:
    current = state or Node.new(event)
    return stamped(state, current, _folded(event, current), event)


@singledispatch
def fold(event: Event, state: Node) -> Node:
    """What an event changes in a node. The types registered here are the ones the `nodes`
    table owns (`streams.state.entities.Kind`), decisions aside: registering one routes it."""
    return state


_folded = by_type(fold)


@fold.register
def _(event: NodeHeartbeat, state: Node) -> Node:
    if state.last_heartbeat_at is not None and event.occurred_at <= state.last_heartbeat_at:
        return state
    update: dict[str, object] = {
        "last_heartbeat_at": event.occurred_at,
        "heartbeat_interval_s": event.payload.interval_s,
        "gpu_count": event.payload.gpus,
    }
    if state.lost is not None and event.occurred_at > state.lost.since:
        update["lost"] = None  # reachable again, by itself
    return state.model_copy(update=update)


@fold.register
def _(event: NodeFactsObserved, state: Node) -> Node:
    t, held = event.occurred_at, state.facts.reported_at
    reported = {
        field: value
        for field, value in event.payload.model_dump(exclude_none=True).items()
        if field not in held or held[field] <= t
    }
    if not reported:
        return state
    times = {**held, **dict.fromkeys(reported, t)}
    facts = state.facts.model_copy(update={**reported, "reported_at": times})
    return state if facts == state.facts else state.model_copy(update={"facts": facts})


@fold.register
def _(event: NodeHealthChecked, state: Node) -> Node:
    p = event.payload
    update: dict[str, object] = {}
    seen = state.health.get(p.check)
    if seen is None or seen.at <= event.occurred_at:
        check = clip(p.check, CHECK_NAME_CHARS_MAX)
        message = clip(p.message, HEALTH_MESSAGE_CHARS_MAX)
        checks = {
            **state.health,
            check: Health(status=p.status, message=message, at=event.occurred_at),
        }
        if len(checks) > HEALTH_CHECKS_KEPT:  # the most recently reported checks
            checks = dict(sorted(checks.items(), key=lambda kv: kv[1].at)[-HEALTH_CHECKS_KEPT:])
        update["health"] = checks
    if p.status == HealthStatus.CRITICAL and all(
        f.event_id != event.event_id for f in state.health_failures
    ):
        failure = HealthFailure(
            check=clip(p.check, CHECK_NAME_CHARS_MAX), at=event.occurred_at, event_id=event.event_id
        )
        kept = sorted((*state.health_failures, failure), key=lambda f: f.at)
        update["health_failures"] = tuple(kept[-HEALTH_FAILURES_KEPT:])
    return state.model_copy(update=update) if update else state


# The counters, which only grow: every int field (annotations are strings here: `from __future__`).
_COUNTERS = tuple(f.name for f in fields(GpuCounters) if f.type == "int")
_counters = attrgetter(*_COUNTERS)
_NO_COUNTERS = GpuCounters()


@fold.register
def _(event: GpuSampled, state: Node) -> Node:
    p = event.payload
    if p.gpu not in state.gpus and len(state.gpus) >= GPUS_KEPT:
        return state  # no node has that many GPUs: the first ones seen are the real ones
    old = state.gpus.get(p.gpu, _NO_COUNTERS)
    # Most samples raise no counter: they cost one comparison of the counters read together
    # (`attrgetter`, in C), no getattr of each and no model.
    seen, held = _counters(p), _counters(old)
    pairs = () if seen == held else zip(_COUNTERS, seen, held, strict=True)
    rose = {name: value for name, value, had in pairs if value is not None and value > had}
    if "ecc_double_bit" in rose:
        rose["ecc_double_bit_rose_at"] = event.occurred_at
    update: dict[str, object] = {}
    if rose:
        update["gpus"] = {**state.gpus, p.gpu: replace(old, **rose)}
    # A GPU's first counts are what it gathered before we saw it, not a rise.
    rises: dict[str, int] = {}
    if rose and p.gpu in state.gpus:
        rises = {n: getattr(p, n) - getattr(old, n) for n in RISES_SEEN if n in rose}
    model = state.facts.gpu_model
    if not quiet(state.slow, p, rises, model):
        slow = signs_after(state.slow, p, rises, model, event.occurred_at)
        if slow is not None:
            update["slow"] = slow
    idle = _idle_since(state.gpu_idle_since.get(p.gpu, None), p.utilization_pct, event.occurred_at)
    if p.utilization_pct is not None and (
        p.gpu not in state.gpu_idle_since or idle != state.gpu_idle_since[p.gpu]
    ):
        update["gpu_idle_since"] = {**state.gpu_idle_since, p.gpu: idle}
    return state.model_copy(update=update) if update else state


def _idle_since(
    seen: datetime | None, utilization_pct: float | None, at: datetime
) -> datetime | None:
    if utilization_pct is None or utilization_pct > IDLE_UTILIZATION_PCT:
        return None
    return seen if seen is not None and seen <= at else at


@fold.register
def _(event: GpuXidObserved, state: Node) -> Node:
    if any(x.event_id == event.event_id for x in state.xids):
        return state
    p = event.payload
    resolution = resolution_of(p.xid, p.message).value
    seen = XidSeen(
        xid=p.xid, gpu=p.gpu, at=event.occurred_at, event_id=event.event_id, resolution=resolution
    )
    counts = state.xid_counts
    if p.xid in counts or len(counts) < XIDS_COUNTED:  # NVIDIA's XID codes are far fewer
        counts = {**counts, p.xid: counts.get(p.xid, 0) + 1}
    return state.model_copy(update={"xids": (*state.xids, seen)[-XIDS_KEPT:], "xid_counts": counts})


@fold.register
def _(event: NodeJobObserved, state: Node) -> Node:
    p = event.payload
    jobs = dict(state.jobs)
    here = jobs.get(p.job_id)
    if p.running and len(p.job_id) <= ID_CHARS_MAX:
        if here is None or here.attempt < p.attempt:
            jobs.pop(p.job_id, None)  # re-inserted last: the newest job is kept when trimming
            jobs[p.job_id] = JobHere(attempt=p.attempt, since=event.occurred_at)
            while len(jobs) > JOBS_PER_NODE_KEPT:
                del jobs[next(iter(jobs))]
    elif here is not None and here.attempt <= p.attempt:
        del jobs[p.job_id]
    failures = state.failures
    if p.failure:
        failure = Failure(at=event.occurred_at, job_id=p.job_id, attempt=p.attempt, cause=p.cause)
        failures = record(failures, failure)
    update: dict[str, object] = {"jobs": jobs, "failures": failures}
    if p.job_id not in jobs:  # what the job told of its pace and what was planned for it end
        update["pace"] = {j: x for j, x in state.pace.items() if j != p.job_id}
        update["slow_plans"] = {j: x for j, x in state.slow_plans.items() if j != p.job_id}
    return state.model_copy(update=update)


@fold.register
def _(event: NodePeerNamed, state: Node) -> Node:
    if any(n.event_id == event.event_id for n in state.named_as_peer):
        return state
    p = event.payload
    named = PeerNamed(
        job_id=clip(p.job_id, ID_CHARS_MAX), by=p.by, at=event.occurred_at, event_id=event.event_id
    )
    kept = sorted((*state.named_as_peer, named), key=lambda n: n.at)[-PEERS_NAMED_KEPT:]
    return state.model_copy(update={"named_as_peer": tuple(kept)})


@fold.register
def _(event: BenchmarkCompleted, state: Node) -> Node:
    p = event.payload
    model = model_of(p, state.facts.gpu_model)
    judged = judge(p, model)
    update: dict[str, object] = {
        "last_benchmark_verdict": judged.verdict,
        "last_benchmark_at": event.occurred_at,
    }
    behind = behind_fleet(p, model) if judged.verdict == "pass" else None
    slow = benchmarked(state.slow, behind, event.occurred_at)
    if slow is not None:
        update["slow"] = slow
    story = state.story
    # A verdict of the story's own benchmark counts, and so does one run since it began (an
    # operator's benchmark of a kept node); an older one, redelivered, does not.
    if (
        story is not None
        and story.stage in VERDICT_STAGES
        and (p.trigger_id in story.triggers or event.occurred_at > story.since)
    ):
        passed = judged.verdict == "pass"
        problem = None if passed else "; ".join(judged.reasons) or judged.verdict
        if p.trigger_id is not None:
            story = story.tried(p.trigger_id, verdict_told(p, judged))
        if passed or story.stage is not Stage.ESCALATED:  # escalated: only a pass moves it
            stage = Stage.PASSED if passed else Stage.KEPT
            story = story.to(
                stage,
                event.occurred_at,
                verdict=judged.verdict,
                problem=problem,
                judged=clip(judged.basis),
            )
        update["story"] = story
    return state.model_copy(update=update)


def verdict_told(p: BenchmarkCompletedPayload, judged: Judged) -> str:
    """A verdict with the figures behind it, as the ladder tells it."""
    figures = []
    tflops = [g.matmul_tflops for g in p.gpus if g.matmul_tflops is not None]
    if tflops:
        figures.append(f"{min(tflops):g} TFLOP/s slowest GPU")
    if p.nccl_busbw_gbps is not None:
        figures.append(f"{p.nccl_busbw_gbps:g} GB/s busbw")
    told = judged.verdict + (f" ({', '.join(figures)})" if figures else "")
    return clip(told + (f": {'; '.join(judged.reasons)}" if judged.reasons else ""), 512)


@fold.register
def _(event: NodeDecided, state: Node) -> Node:
    p, story, at = event.payload, state.story, event.occurred_at
    if story is not None and story.stage is Stage.HELD:
        return state  # an operator holds it: rules decide nothing about it until released
    if p.trigger_type == "QuarantineNodes":
        if story is not None and state.waiting_turn:
            story = story.asked(p.trigger_id)  # either outcome counts
            if not p.batched:  # asked for at once: its batch no longer holds it back
                update = {"reason": clip(p.reason), "decided_by": p.rule or None, "batched": False}
                story = story.model_copy(update=update)
        elif state.may_quarantine:
            story = Story(
                stage=Stage.DRAIN_REQUESTED,
                reason=clip(p.reason),
                decided_at=at,
                since=at,
                triggers=(p.trigger_id,),
                decided_by=p.rule or None,
                batched=p.batched,
                fault=p.fault or p.rule or None,
                severity=p.severity,
            )
        elif story is not None and story.stage is Stage.DRAIN_REQUESTED:
            story = story.asked(p.trigger_id)  # another rule asks too: either outcome counts
    elif story is None or story.status is not NodeStatus.QUARANTINED:
        return state  # benchmark, rungs and release only ever concern a drained node
    elif p.trigger_type == "ReleaseNodes":
        story = story.asked(p.trigger_id).to(Stage.RELEASING, at, release_by=p.rule or None)
    elif story.stage is Stage.RELEASING:
        return state
    elif p.trigger_type == "RunBenchmark":
        story = _rung(story, p, "validate", at).to(Stage.BENCHMARKING, at, problem=None)
    elif p.trigger_type in RUNG_STAGES:
        rung = {"ResetGpus": "reset", "RebootNodes": "reboot"}.get(p.trigger_type)
        story = _rung(story, p, rung, at).to(
            RUNG_STAGES[p.trigger_type], at, problem=None, went_down=False
        )
    if story is state.story:
        return state
    return state.model_copy(update={"story": story})


@fold.register
def _(event: NodeActionReported, state: Node) -> Node:
    p, story, at = event.payload, state.story, event.occurred_at
    if story is None or p.trigger_id not in story.triggers:
        return _outside_the_story(state, event)
    update: dict[str, object] | None = None
    match p.trigger_type, p.succeeded, story.stage:
        case "QuarantineNodes", True, Stage.DRAIN_REQUESTED | Stage.DRAIN_FAILED:
            update = {"story": story.to(Stage.DRAINED, at, problem=None)}
        case "QuarantineNodes", False, Stage.DRAIN_REQUESTED:
            update = {
                "story": story.to(
                    Stage.DRAIN_FAILED, at, problem=p.error and clip(p.error), held_by=p.held_by
                ),
                "episodes": state.episodes + 1,
            }
        case "RunBenchmark", False, Stage.BENCHMARKING:
            failed = story.to(Stage.BENCHMARK_FAILED, at, problem=p.error and clip(p.error))
            update = {"story": _climbed(failed, p, at)}
        case "ReleaseNodes", True, Stage.RELEASING | Stage.RELEASE_FAILED:
            by = f"operator/{p.operator}" if p.operator else story.release_by
            update = _over(state, at, "released", by=by, words=p.reason)  # back in service
        case "ReleaseNodes", False, Stage.RELEASING:
            update = {
                "story": story.to(Stage.RELEASE_FAILED, at, problem=p.error and clip(p.error))
            }
        case _:
            climbed = _climbed(story, p, at)
            update = None if climbed is story else {"story": climbed}
    return state if update is None else state.model_copy(update=update)


def _climbed(story: Story, p: NodeActionReportedPayload, at: datetime) -> Story:
    """A rung's outcome: a reset done, a reboot taken by the scheduler (done only once the node
    is back), an escalation made; or the rung failed (refused or held too: the worker says)."""
    problem = p.error and clip(p.error)
    failed = f"{'held' if p.held_by else 'refused' if p.refused else 'failed'}: {problem}"
    match p.trigger_type, p.succeeded, story.stage:
        case "RunBenchmark", False, Stage.BENCHMARK_FAILED:
            return story.tried(p.trigger_id, failed)
        case "ResetGpus", True, Stage.RESETTING:
            return story.tried(p.trigger_id, "done").to(Stage.RESET, at)
        case "RebootNodes", True, Stage.REBOOT_REQUESTED:
            return story.to(Stage.REBOOTING, at)
        case "ResetGpus" | "RebootNodes", False, Stage.RESETTING | Stage.REBOOT_REQUESTED:
            return story.tried(p.trigger_id, failed).to(Stage.RUNG_FAILED, at, problem=problem)
        case "EscalateNodes", True, Stage.ESCALATING | Stage.ESCALATION_FAILED:
            return story.to(Stage.ESCALATED, at, problem=None)
        case "EscalateNodes", False, Stage.ESCALATING:
            return story.to(Stage.ESCALATION_FAILED, at, problem=problem)
    return story


def _rung(story: Story, p: NodeDecidedPayload, rung: str | None, at: datetime) -> Story:
    """The story asked for a ladder's step: a rung under way is over (given up for the next),
    the rungs left are the step's, and the step is recorded (escalating is no rung)."""
    story = story.asked(p.trigger_id)
    on_ladder = p.ladder is not None or story.ladder is not None
    if story.rung is not None and story.rung.trigger_id != p.trigger_id:
        story = story.tried(story.rung.trigger_id, "given up")
    if p.ladder is not None:
        story = story.model_copy(update={"ladder": p.ladder})
    if on_ladder and rung is not None and all(r.trigger_id != p.trigger_id for r in story.rungs):
        tried = RungTried(rung=rung, trigger_id=p.trigger_id, at=at)
        story = story.model_copy(update={"rungs": (*story.rungs, tried)[-RUNGS_KEPT:]})
    return story


def _over(
    state: Node,
    at: datetime,
    how: str,
    scheduler_reason: str | None = None,
    *,
    by: str | None = None,
    words: str | None = None,
) -> dict[str, object]:
    """The update that ends the node's story at `at`, `how`, `by` whom and in their `words`:
    the next one is a new episode."""
    assert state.story is not None
    ended = StoryEnd(
        how=how,
        at=at,
        reason=clip(state.story.said),
        scheduler_reason=scheduler_reason,
        by=by,
        words=words and clip(words),
    )
    return {"story": None, "episodes": state.episodes + 1, "story_ended_at": at, "ended": ended}


REBOOT_STAGES = frozenset({Stage.REBOOT_REQUESTED, Stage.REBOOTING})


def _rebooting(story: Story, p: NodeStateObservedPayload, at: datetime) -> Story:
    """A rebooting node as its scheduler shows it: down, still rebooting (Slurm's REBOOT_*
    flags), or back. Back is the reboot done: once the scheduler took the reboot (the command
    succeeded), or once the node was seen down since it was asked for."""
    if p.state is SchedulerNodeState.DOWN:
        return story if story.went_down else story.model_copy(update={"went_down": True})
    if "REBOOT" in p.raw_state.upper():
        return story
    if story.stage is Stage.REBOOTING or story.went_down:
        rung = story.rung
        story = story.tried(rung.trigger_id, "back") if rung is not None else story
        return story.to(Stage.REBOOTED, at)
    return story


def _earlier(state: Node) -> str | None:
    """Why the node was suspect or out before an operator's drain, with who said so."""
    if state.story is not None:
        return clip(state.story.said)
    scheduler = state.scheduler
    if state.out_of_service_by_scheduler and scheduler is not None and scheduler.reason:
        return clip(f"scheduler: {scheduler.reason}")
    return None


def _outside_the_story(state: Node, event: NodeActionReported) -> Node:
    """What was done to the node outside its story: an operator's command, or a trigger someone
    else decided. The outcome is what counts: a node drained is out, a node released is back.
    Only outcomes newer than the story count: a redelivered old result changes nothing."""
    p, story, at = event.payload, state.story, event.occurred_at
    begun = story.decided_at if story is not None else None
    newest = max((t for t in (begun, state.story_ended_at) if t is not None), default=None)
    if not p.succeeded or (newest is not None and at <= newest):
        return state
    operator = p.operator and f"operator/{p.operator}"
    if p.trigger_type == "ReleaseNodes" and story is not None:
        update = _over(state, at, "released", by=operator, words=p.reason)
        return state.model_copy(update=update)
    if p.trigger_type != "QuarantineNodes":
        return state
    reason = clip(p.reason or f"drained by {p.action}")
    if operator is not None:
        held = Story(
            stage=Stage.HELD,
            reason=reason,
            decided_at=at,
            since=at,
            triggers=(p.trigger_id,),
            decided_by=operator,
            fault=f"operator:{p.operator}",
            earlier=_earlier(state),  # why it was out already is kept
        )
        # A rule's story is over: the operator holds the node now.
        over = _over(state, at, f"taken over by {operator}", by=operator) if story else {}
        return state.model_copy(update={**over, "story": held})
    if story is not None and story.stage is Stage.DRAIN_REQUESTED:
        # Another decision's drain of the node succeeded while this story waits for its own (a
        # replay that named the same decision otherwise reads the live one's result): the node
        # is drained, and the story goes on from there.
        drained = story.asked(p.trigger_id).to(Stage.DRAINED, at, problem=None)
        return state.model_copy(update={"story": drained})
    if not state.may_quarantine:
        return state
    # A drain decided outside this node's story: the story goes on from there, as a rule's,
    # named by that decision (`Node.episode`), as a replay without the rule names it too.
    decided_at = p.decided_at or at
    drained = Story(
        stage=Stage.DRAINED,
        reason=reason,
        decided_at=decided_at,
        since=at,
        triggers=(p.trigger_id,),
    )
    return state.model_copy(update={"story": drained})


@fold.register
def _(event: NodeStateObserved, state: Node) -> Node:
    p = event.payload
    if state.scheduler is not None and event.occurred_at <= state.scheduler.at:
        return state
    at = event.occurred_at
    view = SchedulerView(
        state=p.state, raw_state=clip(p.raw_state), reason=p.reason and clip(p.reason), at=at
    )
    update: dict[str, object] = {"scheduler": view}
    story = state.story
    if (
        story is None
        or story.status is not NodeStatus.QUARANTINED
        or story.stage is Stage.RELEASING  # our own release, seen before its result
        or at <= story.since
    ):
        return state.model_copy(update=update)
    if p.state in TAKEN_OUT and not ours(p.reason):
        how = "taken"  # someone drained it for a reason of their own: theirs from now on
    elif story.stage in REBOOT_STAGES:
        return state.model_copy(update={**update, "story": _rebooting(story, p, at)})
    elif p.state is SchedulerNodeState.AVAILABLE:
        how = "resumed"  # someone returned the node to service after our drain
    else:
        return state.model_copy(update=update)
    update |= _over(state, at, how, view.reason, by="scheduler")
    return state.model_copy(update=update)
