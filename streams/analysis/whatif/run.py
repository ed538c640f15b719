"""A what-if run: a range of ClickHouse history re-decided under candidate rules by replay's
own parts (`streams.analysis.replay.parallel`), set beside what was decided then, each
difference named (`streams.analysis.replay.reasons`) and the candidate's own priced
(`streams.analysis.whatif.price`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from schemas.envelope import Event
from schemas.events import CancelJob, JobExited, JobStateChanged, QuarantineNodes, RestartJob
from streams.analysis.outcomes import TYPES, outcomes
from streams.analysis.replay.clickhouse_source import ClickHouseSource
from streams.analysis.replay.parallel import Rerun, rerun_parts
from streams.analysis.replay.reasons import Edges, Lookups, Why, name_differences
from streams.analysis.replay.rerun import Decision, compare, current_brain, default_warmup_s
from streams.analysis.reports import events_of, node_facts, outcome_events
from streams.analysis.whatif.candidate import Candidate
from streams.analysis.whatif.price import Priced, PricingSettings, gather, price_differences
from streams.analysis.whatif.through import Assumed, Measured, assumed
from streams.analysis.whatif.world import in_its_world
from streams.history.query import events_by_id
from streams.rules.builtin.restart_incomplete import NAME as RESTART_RULE
from streams.rules.builtin.restart_incomplete import RestartIncompleteConfig
from streams.rules.registry import RuleEngine

PRICED_TYPES = (QuarantineNodes, RestartJob, CancelJob)
FACT_TYPES = (*TYPES, "CheckpointSaved")


@dataclass(frozen=True)
class WhatIf:
    candidate: Candidate
    since: datetime
    until: datetime
    warmup_s: float
    pricing: PricingSettings
    rerun: Rerun
    decisions: list[Decision]
    whys: dict[str, Why]
    priced: list[Priced]
    assumed: Assumed | None  # None: nothing was costly enough to need assuming


def warmup_for(candidate: Candidate) -> float:
    """Long enough for the rules of today and the candidate's alike."""
    return max(default_warmup_s(), default_warmup_s(candidate.settings))


def what_if(
    source: ClickHouseSource,
    candidate: Candidate,
    warmup_s: float,
    parts: int,
    now: datetime,
    pricing: PricingSettings | None = None,
    on_progress: Callable[[float], None] | None = None,
) -> WhatIf:
    pricing = pricing or PricingSettings()
    scope, settings = source.scope, source.settings
    engine = current_brain(candidate.settings).engine
    rerun, decisions, whys = in_its_world(
        lambda withheld: _redecide(
            replace(source, withheld=withheld), candidate, engine, warmup_s, parts, on_progress
        )
    )
    # Only what a priced decision is about is read again: its subject's and its nodes' story.
    costly = [d for d in decisions if d.status != "same" and isinstance(d.trigger, PRICED_TYPES)]
    subjects = sorted(
        {
            s
            for d in costly
            for s in (
                d.trigger.subject,
                *getattr(d.trigger.payload, "nodes", ()),
                *getattr(d.trigger.payload, "jobs", ()),
            )
        }
    )
    observed = min(now, scope.until + timedelta(seconds=pricing.repair_s))
    start = scope.since - timedelta(seconds=warmup_s)
    found = events_of(settings, FACT_TYPES, start, observed, subjects) if subjects else []
    causes = sorted({str(c) for d in costly for c in d.trigger.payload.caused_by})
    found += events_by_id(settings, causes).values() if causes else []
    found = [e for e in found if scope.cluster in (None, e.cluster)]
    nodes = {n for d in costly for n in getattr(d.trigger.payload, "nodes", ())}
    nodes |= {
        n for e in found if isinstance(e, JobExited | JobStateChanged) for n in e.payload.nodes
    }
    gpus, models = node_facts(settings, sorted(nodes), observed) if nodes else ({}, {})
    facts = gather(found, scope.since, scope.until, observed, gpus, models)
    judged = outcome_events(settings, scope.since, observed) if costly else []
    judged = [e for e in judged if scope.cluster in (None, e.cluster)]  # assumed of its own
    assumed = assume(judged, scope.since, scope.until, observed, pricing, engine)
    priced = price_differences(decisions, whys, facts, scope.until, pricing, assumed)
    return WhatIf(
        candidate,
        scope.since,
        scope.until,
        warmup_s,
        pricing,
        rerun,
        decisions,
        whys,
        priced,
        assumed if costly else None,
    )


def _redecide(
    source: ClickHouseSource,
    candidate: Candidate,
    engine: RuleEngine,
    warmup_s: float,
    parts: int,
    on_progress: Callable[[float], None] | None,
) -> tuple[Rerun, list[Decision], dict[str, Why]]:
    """The range re-decided by the candidate, set beside what was decided then, each difference
    named."""
    scope = source.scope
    rerun = rerun_parts(source, warmup_s, parts, candidate.settings, on_progress)
    decisions = compare(rerun.decided, rerun.recorded)
    whys = name_differences(
        decisions,
        loaded_rules={bound.spec.name for bound in engine.rules},
        edges=Edges(
            scope.since - timedelta(seconds=warmup_s),
            scope.since,
            scope.until,
            candidate.settings.tick_interval_s,
        ),
        decided_in_warmup=rerun.warmup_decided,
        lookups=Lookups(source.events_by_id, source.status_before),
    )
    return rerun, decisions, whys


def assume(
    judged: list[Event],
    since: datetime,
    until: datetime,
    observed: datetime,
    pricing: PricingSettings,
    engine: RuleEngine,
) -> Assumed:
    """What pricing a quarantine not made assumes, from the range's decisions and what became
    of them (`streams.analysis.outcomes`), its jobs, and the candidate's restarts."""
    restart = next((b.config for b in engine.rules if b.spec.name == RESTART_RULE), None)
    restarts = (
        restart.max_restarts
        if isinstance(restart, RestartIncompleteConfig) and restart.mode == "live"
        else None
    )
    settings = Measured(
        precision=pricing.precision,
        fails_after_s=pricing.fails_after_s,
        reuse=pricing.reuse,
        restarts=restarts,
        response_s=pricing.response_s,
        node_gpus=pricing.node_gpus,
    )
    span_h = (until - since).total_seconds() / 3600
    return assumed(outcomes(judged, since, until, observed), judged, settings, span_h)
