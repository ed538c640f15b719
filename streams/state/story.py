"""A node's quarantine story, as a state machine that moves on outcomes, never on decisions alone.

    in service ──QuarantineNodes decided──▶ suspect, drain requested
    drain requested ──drain succeeded──▶ quarantined, drained ──RunBenchmark decided──▶ benchmarking
    drain requested ──drain refused or failed──▶ suspect, drain failed (still in service; the
        story is over: a later decision starts a new episode)
    benchmarking ──BenchmarkCompleted──▶ passed (→ ReleaseNodes decided: releasing) or kept
    benchmarking ──benchmark failed──▶ benchmark failed (still drained)
    releasing ──release succeeded──▶ in service (next episode) · release failed ──▶ release failed
    quarantined ──the scheduler reports the node available──▶ in service (someone resumed it)
    quarantined ──the scheduler reports it drained for another reason──▶ over (someone took it)
    any ──an operator's drain succeeded──▶ held (until a release succeeds: no verdict releases it;
        the reason it was already out for is kept, the operator's added)
    any ──a release succeeded, whoever asked──▶ in service (next episode)

With a remediation ladder (docs/remediation.md), a drained node climbs rungs instead of
waiting for people, each rung moving on its own outcome:

    drained / a failed validation ──ResetGpus decided──▶ resetting ──reset succeeded──▶ reset
        (──RunBenchmark decided──▶ benchmarking: the validation) · reset failed ──▶ rung failed
    ──RebootNodes decided──▶ reboot requested ──command succeeded──▶ rebooting ──the scheduler
        shows the node back──▶ rebooted (──RunBenchmark──▶ benchmarking) · failed ──▶ rung failed
    ladder exhausted ──EscalateNodes decided──▶ escalating ──succeeded──▶ escalated (drained for
        hardware service until someone releases it; a passing benchmark releases it too)

A step of the story only happens from the stage that expects it, and only on an outcome of one
of its own triggers: redelivered or late results change nothing. What people did (an operator's
command, a change seen in the scheduler) ends or takes over a story whatever its stage.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from schemas.events.triggers import Rung, Severity


class NodeStatus(StrEnum):
    IN_SERVICE = "in_service"
    SUSPECT = "suspect"  # a drain was asked for and has not succeeded: the node still takes work
    QUARANTINED = "quarantined"  # drained by Centrality: takes no work until a release succeeds


class Stage(StrEnum):
    DRAIN_REQUESTED = "drain_requested"
    DRAIN_FAILED = "drain_failed"  # refused (breaker, allowlist) or failed: `problem` says why
    DRAINED = "drained"
    BENCHMARKING = "benchmarking"
    BENCHMARK_FAILED = "benchmark_failed"  # the benchmark did not run to a verdict
    PASSED = "passed"
    KEPT = "kept"  # the verdict was not a pass: stays quarantined for people to look at
    RELEASING = "releasing"
    RELEASE_FAILED = "release_failed"
    HELD = "held"  # drained by an operator: only an operator's (or the scheduler's) release ends it
    # The remediation ladder's rungs (streams.rules.ladder).
    RESETTING = "resetting"
    RESET = "reset"  # the GPUs were reset: validation follows
    REBOOT_REQUESTED = "reboot_requested"
    REBOOTING = "rebooting"  # the scheduler took the reboot: waiting for the node to be back
    REBOOTED = "rebooted"  # the scheduler shows it back: validation follows
    RUNG_FAILED = "rung_failed"  # a reset or reboot failed or timed out: the next rung follows
    ESCALATING = "escalating"
    ESCALATED = "escalated"  # drained for hardware service until someone releases it
    ESCALATION_FAILED = "escalation_failed"


SUSPECT_STAGES = frozenset({Stage.DRAIN_REQUESTED, Stage.DRAIN_FAILED})
# Stages in which a benchmark's verdict is taken (a verdict nobody asked for, e.g. an operator's
# own run, counts as well once the node is drained: after a hardware repair too).
VERDICT_STAGES = frozenset(
    {Stage.BENCHMARKING, Stage.BENCHMARK_FAILED, Stage.KEPT, Stage.ESCALATED}
)
# The rungs' own stages, by the trigger that begins each.
RUNG_STAGES = {
    "ResetGpus": Stage.RESETTING,
    "RebootNodes": Stage.REBOOT_REQUESTED,
    "EscalateNodes": Stage.ESCALATING,
}


class RungTried(BaseModel):
    """One step of the ladder as climbed: what was decided, and what came of it."""

    model_config = ConfigDict(frozen=True)

    rung: str  # validate, reset, reboot
    trigger_id: uuid.UUID
    at: datetime  # when it was decided
    outcome: str | None = None  # None while under way; e.g. "done", "back", "pass", "failed: …"

    def told(self) -> str:
        return f"{self.rung}: {self.outcome or 'under way'}"


class Story(BaseModel):
    model_config = ConfigDict(frozen=True)

    stage: Stage
    reason: str  # why the node is being taken out (the first decision's words)
    decided_at: datetime
    since: datetime  # when the current stage began (event time of what moved it)
    triggers: tuple[uuid.UUID, ...]  # every trigger of this story: only their outcomes count
    problem: str | None = None  # what went wrong: the breaker's or the action's words
    verdict: str | None = None
    judged: str | None = None  # what the verdict was judged against (GPU model, fleet)
    decided_by: str | None = None  # the rule that began it, or `operator/<name>`
    # The remediation ladder: the rungs left (None: no ladder, the node waits for people), the
    # rungs tried so far, and whether a rebooting node was seen down (so back means rebooted).
    ladder: tuple[Rung, ...] | None = None
    rungs: tuple[RungTried, ...] = ()
    went_down: bool = False
    # The drain asked for waits its turn in a batch (a big job's suspects): a rule that asks
    # for the drain at once (a fatal XID) may still do so.
    batched: bool = False
    # What kind of fault took the node out, as incidents group it (`xid:79`, a rule's name,
    # `operator:<name>`).
    fault: str | None = None
    held_by: str | None = None  # the silence that held its drain (`problem` says until when)
    severity: Severity = "warning"  # the decision's
    # The release asked for (stage RELEASING): who asked, so the node in service says who.
    release_by: str | None = None
    # Why the node was already suspect or out when an operator took it over, each reason with
    # who gave it: a second quarantine adds its reason, it never replaces the first.
    earlier: str | None = None

    @property
    def why(self) -> str:
        """Its reason, with the earlier ones."""
        return f"{self.reason} (earlier: {self.earlier})" if self.earlier else self.reason

    @property
    def said(self) -> str:
        """Its reasons as `who: why` parts, oldest first: what a later story keeps of it."""
        own = f"{self.decided_by}: {self.reason}" if self.decided_by else self.reason
        return f"{self.earlier}; {own}" if self.earlier else own

    @property
    def status(self) -> NodeStatus:
        return NodeStatus.SUSPECT if self.stage in SUSPECT_STAGES else NodeStatus.QUARANTINED

    def to(self, stage: Stage, at: datetime, **update: object) -> Story:
        return self.model_copy(update={"stage": stage, "since": at, **update})

    def asked(self, trigger_id: uuid.UUID) -> Story:
        if trigger_id in self.triggers:
            return self
        return self.model_copy(update={"triggers": (*self.triggers, trigger_id)})

    def tried(self, trigger_id: uuid.UUID, outcome: str) -> Story:
        """The rung of `trigger_id` came to `outcome` (the first outcome stands)."""
        rungs = tuple(
            r.model_copy(update={"outcome": outcome})
            if r.trigger_id == trigger_id and r.outcome is None
            else r
            for r in self.rungs
        )
        return self if rungs == self.rungs else self.model_copy(update={"rungs": rungs})

    @property
    def rung(self) -> RungTried | None:
        """The rung under way, if any."""
        last = self.rungs[-1] if self.rungs else None
        return last if last is not None and last.outcome is None else None


class StoryEnd(BaseModel):
    """How the last story ended: what people read, and what tells them once when people ended
    it by hand."""

    model_config = ConfigDict(frozen=True)

    # "released" (whoever asked: `by`); "resumed" (available again in the scheduler) or "taken"
    # (drained by someone else), both by hand; "taken over by …" (an operator's command).
    # Records of earlier versions say "released by operator …" and carry no `by`.
    how: str
    at: datetime
    reason: str  # the story's reason
    scheduler_reason: str | None = None
    by: str | None = None  # who ended it: the rule, `operator/<name>`, or `scheduler`
    words: str | None = None  # the release's own reason
