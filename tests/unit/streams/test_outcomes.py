"""Outcomes of decisions on a day whose truth is known: each rule's confirmed and false alarms,
restarts that held or failed again, step timings, and the lemon."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from streams.analysis.outcomes import STEPS, OutcomeSettings, binomial_tail, outcomes, steps
from streams.testing import T0
from tests.support.outcome_day import (
    BENCHMARK_S,
    CONFIRMED,
    DRAIN_S,
    FAILED_AGAIN,
    FALSE_ALARM,
    HELD,
    LEMON,
    RELEASE_S,
    outcome_day,
)

DAY = outcome_day()
JUDGED = outcomes(DAY.events, T0, T0 + timedelta(days=1), T0 + timedelta(days=2))


def test_each_node_rule_s_quarantines_are_confirmed_or_false_alarms_as_they_were() -> None:
    by_node = {s.node: s for s in JUDGED.stories}
    for node, rule in CONFIRMED.items():
        assert (by_node[node].rule, by_node[node].outcome) == (rule, "confirmed"), by_node[node]
    for node, rule in FALSE_ALARM.items():
        assert (by_node[node].rule, by_node[node].outcome) == (rule, "false_alarm"), by_node[node]
    assert by_node["bad-1"].why == "benchmark fail"
    assert by_node["flaky-1"].why.startswith("failed again ")  # its benchmark had passed
    assert by_node["flaky-1"].verdict == "pass"


def test_a_false_alarm_is_pending_while_its_window_is_open() -> None:
    early = outcomes(DAY.events, T0, T0 + timedelta(days=1), T0 + timedelta(hours=12))
    ok = next(s for s in early.stories if s.node in FALSE_ALARM)
    assert ok.outcome == "pending" and "watched until" in ok.why


def test_restarts_held_or_failed_again() -> None:
    by_attempt = {(r.job, r.attempt): r.outcome for r in JUDGED.restarts}
    assert by_attempt[(HELD, 1)] == "held"
    assert by_attempt[(FAILED_AGAIN, 1)] == "failed_again"
    assert by_attempt[(FAILED_AGAIN, 2)] == "held"
    # The lemon's jobs were restarted and never ran again: nothing to judge them by.
    assert by_attempt[("slurm/test/lemon-0", 1)] == "pending"
    tighter = outcomes(
        DAY.events,
        T0,
        T0 + timedelta(days=1),
        T0 + timedelta(days=2),
        OutcomeSettings(restart_window_s=120),
    )
    again = {(r.job, r.attempt): r.outcome for r in tighter.restarts}
    assert again[(FAILED_AGAIN, 1)] == "held"  # it ran five minutes: more than two


def test_step_timings_are_the_delays_each_step_took() -> None:
    steps = {s.name: s for s in JUDGED.steps}
    stories = len(CONFIRMED) + len(FALSE_ALARM)
    assert steps["decided_to_drained"].count == stories
    assert steps["decided_to_drained"].p50_s == steps["decided_to_drained"].p99_s == DRAIN_S
    # The benchmark is decided on the drain's result and answers BENCHMARK_S after.
    assert steps["drained_to_validated"].p50_s == BENCHMARK_S
    # Only the nodes whose benchmark passed were released.
    assert steps["validated_to_released"].count == 2
    assert steps["validated_to_released"].p99_s == RELEASE_S
    # The XID and the ECC sample decide at once; three health checks ten minutes apart do not.
    assert steps["symptom_to_decided"].p50_s == 0 and steps["symptom_to_decided"].p99_s == 600


def test_the_lemon_is_named_and_no_other_node() -> None:
    [lemon] = JUDGED.lemons
    assert lemon.node == LEMON and lemon.jobs_failed == 6 and lemon.jobs_ran == 6
    assert lemon.p_value == pytest.approx(JUDGED.failure_rate**6)  # type: ignore[operator]
    assert lemon.p_value < 0.01 / JUDGED.nodes_judged


def test_binomial_tail() -> None:
    assert binomial_tail(10, 0.5, 0) == 1.0
    assert binomial_tail(3, 0.5, 2) == pytest.approx(0.5)
    assert binomial_tail(20, 0.1, 5) == pytest.approx(0.0431, abs=1e-4)
    assert binomial_tail(5, 0.0, 1) == 0.0


def test_a_step_that_ends_before_it_begins_is_counted_apart_never_negative() -> None:
    """A simulator stamping ahead of the workers' clock gave "decided → drained p50 -255 s"
    (issue 40): the drain was stamped before the decision it carried out."""
    early = [
        replace(s, drained_at=s.decided_at - timedelta(seconds=255))
        for s in JUDGED.stories
        if s.drained_at is not None
    ][:2]
    skewed = {s.name: s for s in steps([*JUDGED.stories, *early])}
    drained = skewed["decided_to_drained"]
    assert drained.out_of_order == 2 and drained.p50_s == DRAIN_S
    assert all(s.p50_s is None or s.p50_s >= 0 for s in skewed.values())
    assert {s.name: s.out_of_order for s in JUDGED.steps} == dict.fromkeys(STEPS, 0)
