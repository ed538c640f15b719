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
    any ──an operator's drain succeeded──▶ held (until a release succeeds: no verdict releases it)
    any ──a release succeeded, whoever asked──▶ in service (next episode)

A step of the story only happens from the stage that expects it, and only on an outcome of one
of its own triggers: redelivered or late results change nothing. What people did (an operator's
command, a change seen in the scheduler) ends or takes over a story whatever its stage.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict


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


SUSPECT_STAGES = frozenset({Stage.DRAIN_REQUESTED, Stage.DRAIN_FAILED})
# Stages in which a benchmark's verdict is taken (a verdict nobody asked for, e.g. an operator's
# own run, counts as well once the node is drained).
VERDICT_STAGES = frozenset({Stage.BENCHMARKING, Stage.BENCHMARK_FAILED, Stage.KEPT})


class Story(BaseModel):
    model_config = ConfigDict(frozen=True)

    stage: Stage
    reason: str  # why the node is being taken out (the first decision's words)
    decided_at: datetime
    since: datetime  # when the current stage began (event time of what moved it)
    triggers: tuple[uuid.UUID, ...]  # every trigger of this story: only their outcomes count
    problem: str | None = None  # what went wrong: the breaker's or the action's words
    verdict: str | None = None
    decided_by: str | None = None  # the rule that began it, or `operator/<name>`

    @property
    def status(self) -> NodeStatus:
        return NodeStatus.SUSPECT if self.stage in SUSPECT_STAGES else NodeStatus.QUARANTINED

    def to(self, stage: Stage, at: datetime, **update: object) -> Story:
        return self.model_copy(update={"stage": stage, "since": at, **update})

    def asked(self, trigger_id: uuid.UUID) -> Story:
        if trigger_id in self.triggers:
            return self
        return self.model_copy(update={"triggers": (*self.triggers, trigger_id)})


class StoryEnd(BaseModel):
    """How the last story ended: what people read, and what tells them once when people ended
    it by hand."""

    model_config = ConfigDict(frozen=True)

    # "released"; "resumed" (available again in the scheduler) or "taken" (drained by someone
    # else), both by hand; "released by …" or "taken over by …" (an operator's command)
    how: str
    at: datetime
    reason: str  # the story's reason
    scheduler_reason: str | None = None
