"""What-if: candidate rules re-decide a day through the brain, each difference priced."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from schemas.envelope import Event
from schemas.events import ActionSucceeded, JobExited, QuarantineNodes, RestartJob
from streams.analysis.replay.reasons import Edges, Lookups, name_differences
from streams.analysis.replay.rerun import compare, current_brain, rerun
from streams.analysis.replay.source import without_outcomes
from streams.analysis.whatif.candidate import CandidateError, candidate
from streams.analysis.whatif.price import Priced, PricingSettings, gather, price_differences
from streams.analysis.whatif.run import assume
from streams.analysis.whatif.through import faulty, let_through
from streams.analysis.whatif.world import Redecided, in_its_world
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.testing import T0, completed, ended, result, running, sample, xid
from tests.support.outcome_day import BENCHMARK_S, FALSE_ALARM, RELEASE_S, Day, H, outcome_day

DAY = outcome_day()
SINCE, UNTIL, OBSERVED = T0, T0 + timedelta(days=1), T0 + timedelta(days=2)


def priced(*sets: str, pricing: PricingSettings | None = None, day: Day = DAY) -> list[Priced]:
    cand = candidate(StreamsSettings(), sets=sets)
    by_id = {str(e.event_id): e for e in day.events}

    def nothing(subjects: Sequence[str], before: datetime) -> dict[str, Any]:
        return {}

    def redecide(withheld: frozenset[str]) -> Redecided[None]:
        facts = without_outcomes(day.facts, withheld)
        decisions = compare(rerun(facts, current_brain(cand.settings), 5.0), day.decisions)
        whys = name_differences(
            decisions,
            loaded_rules={b.spec.name for b in current_brain(cand.settings).engine.rules},
            edges=Edges(SINCE, SINCE, UNTIL),
            decided_in_warmup={},
            lookups=Lookups(lambda ids: {i: by_id[i] for i in ids if i in by_id}, nothing),
        )
        return None, decisions, whys

    _, decisions, whys = in_its_world(redecide)
    facts = gather(day.events, SINCE, UNTIL, OBSERVED)
    pricing = pricing or PricingSettings()
    engine = current_brain(cand.settings).engine
    assumed = assume(day.events, SINCE, UNTIL, OBSERVED, pricing, engine)
    return price_differences(decisions, whys, facts, UNTIL, pricing, assumed)


def test_a_candidate_is_today_s_rules_with_what_it_names_changed() -> None:
    base = StreamsSettings(rule_config={"fatal_xid": {"severity": "warning"}})
    cand = candidate(base, sets=["repeated_failures_on_node_set.window.window_s=7200"])
    assert cand.settings.rule_config == {
        "fatal_xid": {"severity": "warning"},
        "repeated_failures_on_node_set": {"window": {"window_s": 7200}},
    }
    assert base.rule_config == {"fatal_xid": {"severity": "warning"}}  # never changed
    assert cand.settings.rule_modules == base.rule_modules
    for bad, words in (
        ("fatal_xid=1", "rule.field=value"),
        ("no_such_rule.threshold=1", "no such rule"),
        ("repeated_failures_on_node_set.threshold=zero", "threshold"),
        ("fatal_xid.severity.level=1", "a value, not a group"),
    ):
        with pytest.raises(CandidateError, match=words):
            candidate(
                StreamsSettings(rule_config={"fatal_xid": {"severity": "warning"}}), sets=[bad]
            )


def test_a_quarantine_not_made_gives_back_the_time_the_node_was_out() -> None:
    [gone] = [p for p in priced("repeated_health_failures.threshold=4") if p.price.gpu_h]
    assert (gone.decision.status, gone.decision.trigger.type) == ("missing", "QuarantineNodes")
    [node] = FALSE_ALARM
    assert getattr(gone.decision.trigger.payload, "nodes", ()) == (node,)
    # Drained, benchmarked (BENCHMARK_S after the benchmark was decided on the drain), released
    # RELEASE_S after the verdict: eight GPUs (none counted) out that long, given back.
    assert gone.price.capacity_gpu_h == pytest.approx(-8 * (BENCHMARK_S + RELEASE_S) / 3600)
    assert "recorded" in gone.price.basis


def test_restarts_not_made_cost_a_person_s_response_each() -> None:
    gone = [p for p in priced("restart_incomplete_exit.enabled=false") if p.price.gpu_h]
    assert gone and {(p.decision.status, p.decision.trigger.type) for p in gone} == {
        ("missing", "RestartJob")
    }
    # Each restarted attempt failed; its nodes have eight GPUs each (nothing said otherwise).
    for p in gone:
        restart = p.decision.trigger
        [exit_] = [
            e
            for e in DAY.facts
            if isinstance(e, JobExited)
            and e.subject == restart.subject
            and e.payload.attempt == restart.payload.attempt  # type: ignore[attr-defined]
        ]
        gpus = 8 * len(exit_.payload.nodes)
        assert p.price.work_gpu_h == pytest.approx(gpus * 0.5), p.price.basis
    slower = priced(
        "restart_incomplete_exit.enabled=false", pricing=PricingSettings(response_s=7200)
    )
    assert sum(p.price.gpu_h for p in slower) == pytest.approx(4 * sum(p.price.gpu_h for p in gone))


def test_a_quarantine_only_the_candidate_makes_is_priced_from_the_recorded_stories() -> None:
    new = [
        p
        for p in priced("repeated_failures_on_node_set.threshold=1")
        if p.decision.trigger.type == "QuarantineNodes"
    ]
    assert new and {p.decision.status for p in new} == {"new"}
    # The range's recorded stories that ended (two, each out BENCHMARK_S + RELEASE_S): the median.
    per_node = 8 * (BENCHMARK_S + RELEASE_S) / 3600
    for p in new:
        nodes = len(getattr(p.decision.trigger.payload, "nodes", ()))
        assert p.price.capacity_gpu_h == pytest.approx(nodes * per_node)
        assert "median" in p.price.basis


def test_a_faulty_node_left_in_service_costs_what_it_lets_through() -> None:
    """`--set fatal_xid.enabled=false` gave "net -576 GPU-h", a saving: the capacity the nodes
    kept out would give back, not the jobs those bad nodes go on failing (issue 40). bad-1
    failed its benchmark: left in service it gives nothing back, and fails the next job placed
    on it, which its restarts bring back as often as the day's restarts went back to a node
    they had, and then waits for a person. It was idle: that next job comes as often as jobs
    started on it over the day (one, before its fault), before the day ends."""
    used = Day([*DAY.facts, *ran_there("bad-1", 0.2 * H, 0.9 * H)], DAY.decisions)
    [gone] = [p for p in priced("fatal_xid.enabled=false", day=used) if p.price.gpu_h]
    assert (gone.decision.status, gone.decision.trigger.payload.rule) == ("missing", "fatal_xid")
    a = assume(used.events, SINCE, UNTIL, OBSERVED, PricingSettings(), engine())
    job_gpus, fails_after_s = a.job_gpus["test"], 300.0  # FAILED_AGAIN's second attempt
    assert a.fails_after_s == fails_after_s and a.restarts == 3
    assert a.reuse == 0  # every restart of the day ran on other nodes
    assert a.placed_per_h["bad-1"] == pytest.approx(1 / 24)
    placed = 1 - math.exp(-23 / 24)  # its XID came an hour in: 23 h left
    assert gone.price.capacity_gpu_h == 0
    assert gone.price.work_gpu_h == pytest.approx(placed * job_gpus * fails_after_s / 3600)
    for words in ("faulty (benchmark fail)", "next job placed there", "restarts could go back"):
        assert words in gone.price.basis
    faulty_ = (1.0, "faulty")
    # Restarts that go back to their nodes bring it back to the faulty one, up to 3 times.
    sticky = let_through(
        "bad-1", "test", 0, (0.0, ""), 8, faulty_, replace(a, reuse=1.0), left_h=1e6
    )
    assert sticky.work_gpu_h == pytest.approx(job_gpus * (4 * fails_after_s + 1800) / 3600)
    # A job its fault took down (32 GPUs) goes back to it only with its restarts.
    ran = let_through("bad-1", "test", 32, (0.0, ""), 8, faulty_, replace(a, reuse=0.5), 0.0)
    assert ran.work_gpu_h == pytest.approx(32 * ((0.5 + 0.25 + 0.125) * 300 + 0.125 * 1800) / 3600)


def test_a_faulty_spare_no_job_reaches_lets_nothing_through() -> None:
    """bad-1 ran nothing all day: a spare the scheduler never reached. Left in service faulty,
    no job is placed there to fail (`bench goodput`'s idle spares: the what-if of one rule off
    priced each as failing the next job, 5.6 times what the world without it lost)."""
    [gone] = [p for p in priced("fatal_xid.enabled=false") if "bad-1" in p.price.basis]
    assert gone.price.gpu_h == 0
    assert "no job started there over the range" in gone.price.basis


def ran_there(node: str, at_s: float, until_s: float) -> list[Event]:
    job = f"slurm/test/on-{node}"
    return [
        running(job, 1, at_s, (node,)),
        completed(job, until_s - 1),
        ended(job, "SUCCEEDED", 1, until_s, (node,), exit_code=0),
    ]


def test_a_sound_node_gives_its_time_back_and_an_unjudged_one_its_rule_s_precision() -> None:
    [sound] = [p for p in priced("repeated_health_failures.enabled=false") if p.price.gpu_h]
    assert sound.price.work_gpu_h == 0 and sound.price.capacity_gpu_h < 0
    assert "sound (benchmark passed" in sound.price.basis
    # With no story judged, the rule is taken at its measured precision: none here, so at
    # the assumed one (CENTRALITY_WHATIF_PRECISION).
    half = PricingSettings(precision=0.5)
    chance = faulty(
        None, "no_such_rule", assume(DAY.events, SINCE, UNTIL, OBSERVED, half, engine())
    )
    assert chance == (0.5, "faulty with the assumed precision 50%")


def test_no_rules_at_all_price_every_restart_a_person_s_wait_and_every_fault_let_through() -> None:
    every = priced("*.enabled=false")
    assert {p.decision.status for p in every} == {"missing"}
    restarts = [p for p in every if p.decision.trigger.type == "RestartJob" and p.price.gpu_h]
    assert restarts and all(p.price.work_gpu_h > 0 for p in restarts)
    a = assume(DAY.events, SINCE, UNTIL, OBSERVED, PricingSettings(), engine(none=True))
    assert a.restarts is None  # nobody restarts the job it fails: it waits for a person
    placed = replace(a, placed_per_h={"bad-1": 1.0})
    once = let_through("bad-1", "test", 0, (0.0, ""), 8, (1.0, "faulty"), placed, left_h=1e6)
    assert once.work_gpu_h == pytest.approx(a.job_gpus["test"] * (300 + 1800) / 3600)
    ran = let_through("bad-1", "test", 32, (0.0, ""), 8, (1.0, "faulty"), a, left_h=1e6)
    assert ran.work_gpu_h == 0  # the person answering its job's failure takes it out
    assert sum(p.price.gpu_h for p in every) > 0


def test_a_restart_that_was_never_carried_out_saved_nothing_to_undo() -> None:
    refused = Day(
        [
            result(t, (t.occurred_at - T0).total_seconds() + 2, error="off", refused=True)
            if isinstance(e, ActionSucceeded) and isinstance(t := by_trigger(e), RestartJob)
            else e
            for e in DAY.facts
        ],
        DAY.decisions,
    )
    gone = [p for p in priced("restart_incomplete_exit.enabled=false", day=refused)]
    assert gone and all(p.price.gpu_h == 0 for p in gone)
    assert all(
        "not carried out" in p.price.basis for p in gone if p.decision.trigger.type == "RestartJob"
    )


def by_trigger(result_: ActionSucceeded) -> object:
    return next((t for t in DAY.decisions if t.event_id == result_.payload.trigger_id), None)


def engine(none: bool = False) -> RuleEngine:
    sets = ["*.enabled=false"] if none else []
    return current_brain(candidate(StreamsSettings(), sets=sets).settings).engine


def test_a_node_another_rule_takes_out_instead_lets_nothing_through() -> None:
    """An HBM3 fault shows as XID 48 and a double-bit ECC count at once: without the rule that
    took the node out, the other does, and the node is out as it was."""
    h = 3600.0
    facts = [*DAY.facts, xid("n-9", 48, at_s=10 * h), sample("n-9", 0, 10 * h, ecc_double_bit=1)]
    [drain] = [
        t
        for t in rerun(facts, current_brain(), 5.0)
        if isinstance(t, QuarantineNodes) and "n-9" in t.payload.nodes
    ]
    facts.append(result(drain, 10 * h + 5))
    day = Day(facts, rerun(facts, current_brain(), 5.0))
    off = f"{drain.payload.rule}.enabled=false"
    [instead] = [
        p
        for p in priced(off, day=day)
        if isinstance(p.decision.trigger, QuarantineNodes)
        and "n-9" in p.decision.trigger.payload.nodes
    ]
    assert instead.decision.status == "missing" and instead.price.gpu_h == 0
    assert "instead, 0 s later" in instead.price.basis


def test_a_node_another_rule_would_take_out_later_is_found_in_the_candidate_s_world() -> None:
    """`bench goodput`'s HBM3 faults: the XID comes a sample before the ECC count, the node is
    drained by then, and replay folds that drain whatever the candidate decides, so the ECC rule
    never got its chance and the what-if priced the fault as let through (the world without
    the XID rule lost 5.6 times less). In the candidate's world the drain never happened: the
    ECC rule takes the node out five minutes on."""
    h = 3600.0
    ecc = sample("n-9", 0, 10 * h + 300, ecc_double_bit=1)
    facts = [*DAY.facts, xid("n-9", 48, at_s=10 * h), ecc]
    [drain] = [
        t
        for t in rerun(facts, current_brain(), 5.0)
        if isinstance(t, QuarantineNodes) and "n-9" in t.payload.nodes
    ]
    assert drain.payload.rule == "fatal_xid"
    facts.append(result(drain, 10 * h + 5))
    day = Day(facts, rerun(facts, current_brain(), 5.0))
    assert not [t for t in day.decisions if t.payload.caused_by == (ecc.event_id,)]
    [instead] = [
        p
        for p in priced("fatal_xid.enabled=false", day=day)
        if isinstance(p.decision.trigger, QuarantineNodes)
        and "n-9" in p.decision.trigger.payload.nodes
    ]
    assert instead.decision.status == "missing" and instead.price.gpu_h == 0
    assert "taken out by ecc_double_bit instead, 300 s later" in instead.price.basis
