"""What-if: candidate rules re-decide a day through the brain, each difference priced."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import pytest

from schemas.events import JobExited
from streams.replay.reasons import Edges, Lookups, name_differences
from streams.replay.rerun import compare, current_brain, rerun
from streams.settings import StreamsSettings
from streams.testing import T0
from streams.whatif.candidate import CandidateError, candidate
from streams.whatif.price import Priced, PricingSettings, gather, price_differences
from tests.support.outcome_day import BENCHMARK_S, FALSE_ALARM, RELEASE_S, outcome_day

DAY = outcome_day()
SINCE, UNTIL, OBSERVED = T0, T0 + timedelta(days=1), T0 + timedelta(days=2)


def priced(*sets: str, pricing: PricingSettings | None = None) -> list[Priced]:
    cand = candidate(StreamsSettings(), sets=sets)
    decided = rerun(DAY.facts, current_brain(cand.settings), 5.0)
    decisions = compare(decided, DAY.decisions)
    by_id = {str(e.event_id): e for e in DAY.events}

    def nothing(subjects: Sequence[str], before: datetime) -> dict[str, Any]:
        return {}

    whys = name_differences(
        decisions,
        loaded_rules={b.spec.name for b in current_brain(cand.settings).engine.rules},
        edges=Edges(SINCE, SINCE, UNTIL),
        decided_in_warmup={},
        lookups=Lookups(lambda ids: {i: by_id[i] for i in ids if i in by_id}, nothing),
    )
    facts = gather(DAY.events, SINCE, UNTIL, OBSERVED)
    return price_differences(decisions, whys, facts, UNTIL, pricing or PricingSettings())


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
