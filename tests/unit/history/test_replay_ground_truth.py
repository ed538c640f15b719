"""Replay as the ground truth: what a decision says never depends on when it was computed, and
every decision a replay does not reproduce is named with the reason it cannot."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from centrality.commands import command
from centrality.history_cli import time_range
from schemas.envelope import Event
from schemas.events import NodeStatusChanged, QuarantineNodes, ReleaseNodes, RunBenchmark
from streams.analysis.replay.reasons import Edges, Lookups, name_differences
from streams.analysis.replay.rerun import compare, rerun
from streams.brain.process import Brain
from streams.brain.views import Views
from streams.history.query import event_time_key
from streams.rules.registry import RuleEngine
from streams.settings import BUILTIN_RULES
from streams.state.entities import NODES
from streams.testing import T0, benchmark, checkpoint, heartbeat, result, running, sample, xid

RULES = list(BUILTIN_RULES)
SHORT: dict[str, dict[str, object]] = {
    "checkpoint_stall": {"limit_s": 60},
    "idle_allocation": {"idle_s": 60},
    "heartbeat_lost": {"limit_s": 30},
}


def brain(config: dict[str, dict[str, object]] | None = None) -> Brain:
    return Brain(RuleEngine.load(RULES, config or SHORT))


def quiet_fleet() -> list[Event]:
    """A node that stops heartbeating, a job that stops checkpointing and GPUs that idle."""
    return sorted(
        [
            heartbeat("n1", 0),
            heartbeat("n1", 10),
            running("slurm/test/7", at_s=0, nodes=("n2",)),
            checkpoint(10, subject="slurm/test/7", at_s=20),
            *(sample("n2", gpu=0, at_s=s, utilization_pct=0.0) for s in range(0, 400, 50)),
            heartbeat("n3", 390),  # the range goes on: ticks run to its last event
        ],
        key=event_time_key,
    )


def test_a_decision_says_the_same_whenever_the_clock_ticked() -> None:
    facts = quiet_fleet()
    by_five = {str(t.event_id): t for t in rerun(facts, brain(), 5.0)}
    by_seven = {str(t.event_id): t for t in rerun(facts, brain(), 7.0)}
    rules = {t.payload.rule for t in by_five.values()}
    assert {"heartbeat_lost", "checkpoint_stall", "idle_allocation"} <= rules
    assert by_five.keys() == by_seven.keys()
    for tid, decided in by_five.items():
        # Decided at other instants (each clock's tick), saying the very same thing.
        assert decided.payload == by_seven[tid].payload, decided.payload.rule
    lost = next(t for t in by_five.values() if t.payload.rule == "heartbeat_lost")
    assert lost.payload.reason == (
        f"no heartbeat from n1 since {(T0 + timedelta(seconds=10)).isoformat()} (limit 30 s)"
    )


def test_both_ends_of_a_range_are_read_against_one_instant() -> None:
    since, until = time_range("26m", "now", T0)
    assert (since, until) == (T0 - timedelta(minutes=26), T0)


def story_then_again() -> list[Event]:
    """n1 quarantined (fatal XID), benchmarked, released; two hours later a second fatal XID,
    a second quarantine episode."""
    facts: list[Event] = [heartbeat("n1", s) for s in range(0, 3 * 3600, 600)]
    facts += [xid("n1", 79, at_s=60), xid("n1", 79, at_s=2 * 3600)]
    return _acted(facts)


def _acted(facts: list[Event], verdict: str = "pass") -> list[Event]:
    """The facts with what the action workers and the benchmark answered the decisions."""
    answered: set[str] = set()
    while True:
        fresh = [
            t
            for t in rerun(facts, brain(), 5.0)
            if isinstance(t, QuarantineNodes | RunBenchmark | ReleaseNodes)
            and str(t.event_id) not in answered
        ]
        if not fresh:
            return sorted(facts, key=event_time_key)
        for t in fresh:
            answered.add(str(t.event_id))
            at_s = (t.occurred_at - T0).total_seconds()
            facts.append(result(t, at_s + 5))
            if isinstance(t, RunBenchmark):
                facts.append(benchmark("n1", verdict, at_s + 10, trigger=t))


def lookups(facts: Sequence[Event]) -> Lookups:
    by_id = {str(e.event_id): e for e in facts}

    def status_before(
        subjects: Sequence[str], before: datetime
    ) -> dict[str, tuple[datetime, dict[str, Any]]]:
        found: dict[str, tuple[datetime, dict[str, Any]]] = {}
        for e in sorted(facts, key=event_time_key):
            if (
                isinstance(e, NodeStatusChanged)
                and e.subject in subjects
                and e.occurred_at < before
            ):
                found[e.subject] = (e.occurred_at, e.payload.model_dump(mode="json"))
        return found

    return Lookups(lambda ids: {i: by_id[i] for i in ids if i in by_id}, status_before)


def status(node: str, facts: Sequence[Event], at: datetime) -> NodeStatusChanged:
    """What the live worker showed of `node` after folding `facts` up to `at`."""
    live = brain()
    rerun([e for e in facts if e.occurred_at < at], live, 5.0)
    shown = Views(live.engine).status_change(NODES, None, live.nodes[node], facts[0])
    assert isinstance(shown, NodeStatusChanged)
    return shown.model_copy(update={"occurred_at": at - timedelta(seconds=1)})


def test_a_story_after_a_warm_up_that_missed_the_first_is_reproduced() -> None:
    """The second story's decisions were named by a count of the node's earlier stories (q1
    live, q0 in a replay whose warm-up began after the first): the same decisions under other
    ids, "renamed" (issue 40). Named by when the story began, they are the same; only the
    operator's command, which rules never make, differs."""
    facts = story_then_again()
    live = rerun(facts, brain(), 5.0)
    operator = command(
        QuarantineNodes,
        operator="alice",
        cluster="test",
        subject="n2",
        reason="fans",
        nodes=("n2",),
    ).model_copy(update={"occurred_at": T0 + timedelta(hours=2, minutes=30)})
    since = T0 + timedelta(hours=1, minutes=50)
    until = T0 + timedelta(hours=3)
    warmup_start = since - timedelta(minutes=30)  # after the first story
    recorded = [t for t in [*live, operator] if since <= t.occurred_at < until]
    dropped: dict[str, datetime] = {}
    replayed = rerun(
        [e for e in facts if e.occurred_at >= warmup_start],
        brain(),
        5.0,
        since,
        warmup_decided=dropped,
    )
    decisions = compare(replayed, recorded)
    whys = name_differences(
        decisions,
        loaded_rules={b.spec.name for b in brain().engine.rules},
        edges=Edges(warmup_start, since, until),
        decided_in_warmup=dropped,
        lookups=lookups([*facts, *live]),
    )
    second = [d for d in decisions if d.trigger.payload.rule != "heartbeat_lost"]
    assert {d.trigger.type for d in second if d.status == "same"} >= {
        "QuarantineNodes", "RunBenchmark", "ReleaseNodes"
    }  # fmt: skip
    [differing] = [d for d in decisions if d.status != "same"]
    assert differing.trigger_id == str(operator.event_id)
    assert whys == {str(operator.event_id): whys[str(operator.event_id)]}
    assert whys[str(operator.event_id)].reason == "operator"


def test_a_node_out_of_service_before_the_warm_up_is_named() -> None:
    """n1 is kept out by a failed benchmark; a second fatal XID two hours on decides nothing
    live (its story is under way), but a replay starting afresh quarantines it."""
    facts: list[Event] = [heartbeat("n1", s) for s in range(0, 3 * 3600, 600)]
    facts += [xid("n1", 79, at_s=60), xid("n1", 79, at_s=2 * 3600)]
    facts = _acted(facts, verdict="fail")
    live = rerun(facts, brain(), 5.0)
    since, until = T0 + timedelta(hours=1, minutes=50), T0 + timedelta(hours=3)
    warmup_start = since - timedelta(minutes=30)
    shown = status("n1", facts, warmup_start)
    assert shown.payload.state == "quarantined"
    replayed = rerun([e for e in facts if e.occurred_at >= warmup_start], brain(), 5.0, since)
    decisions = compare(replayed, [t for t in live if since <= t.occurred_at < until])
    whys = name_differences(
        decisions,
        loaded_rules={b.spec.name for b in brain().engine.rules},
        edges=Edges(warmup_start, since, until),
        decided_in_warmup={},
        lookups=lookups([*facts, *live, shown]),
    )
    [new] = [d for d in decisions if d.status != "same"]
    assert (new.status, new.trigger.type) == ("new", "QuarantineNodes")
    why = whys[new.trigger_id]
    assert why.reason == "state_before_warmup" and "n1 was quarantined" in why.words


def test_a_tick_decided_on_either_side_of_the_start_is_named() -> None:
    """The node is lost once silent 30 s past its beat at 10 s: a clock ticking every 5 s
    decides it at 45 s, one ticking every 7 s at 42 s; the range starts at 43 s."""
    facts = [heartbeat("n1", 0), heartbeat("n1", 10), heartbeat("n3", 100)]
    since, until = T0 + timedelta(seconds=43), T0 + timedelta(seconds=200)
    for live_tick_s, replay_tick_s, status, reason in (
        (5.0, 7.0, "missing", "decided_in_warmup"),
        (7.0, 5.0, "new", "recorded_outside_range"),
    ):
        live = rerun(facts, brain(), live_tick_s)
        dropped: dict[str, datetime] = {}
        replayed = rerun(facts, brain(), replay_tick_s, since, warmup_decided=dropped)
        recorded = [t for t in live if since <= t.occurred_at < until]
        decisions = compare(replayed, recorded)
        whys = name_differences(
            decisions,
            loaded_rules={b.spec.name for b in brain().engine.rules},
            edges=Edges(T0, since, until, tick_interval_s=7.0),
            decided_in_warmup=dropped,
            lookups=lookups([*facts, *live]),
        )
        [lost] = [d for d in decisions if d.trigger.payload.rule == "heartbeat_lost"]
        assert lost.status == status
        assert whys[lost.trigger_id].reason == reason


def test_a_rule_not_loaded_and_an_unexplained_difference_are_told_apart() -> None:
    facts = story_then_again()
    live = rerun(facts, brain(), 5.0)
    without_xid = Brain(RuleEngine.load([r for r in RULES if not r.endswith(".fatal_xid")], SHORT))
    milder = brain({**SHORT, "fatal_xid": {"severity": "warning"}})
    for replaying, status, reason in (
        (without_xid, "missing", "rule_not_loaded"),
        (milder, "changed", "unexplained"),  # its config differs: nothing in history says so
    ):
        decisions = compare(rerun(facts, replaying, 5.0), live)
        whys = name_differences(
            decisions,
            loaded_rules={b.spec.name for b in replaying.engine.rules},
            edges=Edges(T0, T0, T0 + timedelta(hours=3)),
            decided_in_warmup={},
            lookups=lookups(facts),
        )
        differing = [d for d in decisions if d.status != "same"]
        assert {d.trigger.payload.rule for d in differing} == {"fatal_xid"}
        assert {d.status for d in differing} == {status}
        assert {whys[d.trigger_id].reason for d in differing} == {reason}


def test_a_decision_on_causes_written_long_after_they_happened_is_named_late() -> None:
    """History sent in a burst (`centrality simulate`): the live worker folds what comes on
    other topics (a job's start) in the order it arrives, so a node's decision may name other
    jobs than a replay, in event time, finds. Its causes say so: written long after they
    happened. The same difference on causes written at once is unexplained."""
    for written_s, reason in ((900.0, "arrived_late"), (1.0, "unexplained")):
        cause = xid("n1", 79, at_s=60)
        cause = cause.model_copy(
            update={"observed_at": cause.occurred_at + timedelta(seconds=written_s)}
        )
        [now] = rerun([cause], brain(), 5.0)
        assert isinstance(now, QuarantineNodes)
        then = now.model_copy(
            update={"payload": now.payload.model_copy(update={"jobs": ("slurm/test/1",)})}
        )
        [changed] = compare([now], [then])
        whys = name_differences(
            [changed],
            loaded_rules={b.spec.name for b in brain().engine.rules},
            edges=Edges(T0, T0, T0 + timedelta(hours=1)),
            decided_in_warmup={},
            lookups=lookups([cause]),
        )
        assert (changed.status, whys[changed.trigger_id].reason) == ("changed", reason)
