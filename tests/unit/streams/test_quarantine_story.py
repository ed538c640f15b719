"""The quarantine story through the pure Brain: node state follows what actions report.

decided (suspect) → drain succeeded (quarantined) → benchmark → verdict → release or keep →
release succeeded (in service). Results are built from the triggers the brain decided, as an
action worker would report them.
"""

from __future__ import annotations

from typing import Any

from schemas.envelope import Event
from schemas.events import Notify, QuarantineNodes, ReleaseNodes, RunBenchmark, Trigger
from streams.brain.process import Brain
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.state.story import NodeStatus, Stage
from streams.testing import benchmark, ended, episode, result, running, scheduler_says, xid

BREAKER = "circuit breaker: quarantining 3 of 20 nodes exceeds 10% within 3600s"


def brain(**config: dict[str, Any]) -> Brain:
    return Brain(RuleEngine.load(StreamsSettings().rule_modules, config))


def feed(b: Brain, *events: Event) -> list[Trigger]:
    return [t for e in events for t in b.handle(e)]


def decided(b: Brain, node: str = "n1", at_s: float = 1.0) -> QuarantineNodes:
    [drain] = feed(b, xid(node, 79, at_s=at_s))
    assert isinstance(drain, QuarantineNodes)
    return drain


def drained(b: Brain, node: str = "n1") -> RunBenchmark:
    [bench] = feed(b, result(decided(b, node), at_s=2))
    assert isinstance(bench, RunBenchmark)
    return bench


def test_the_whole_story_moves_on_outcomes_only() -> None:
    b = brain()
    drain = decided(b)
    n = b.nodes["n1"]
    assert n.status is NodeStatus.SUSPECT and n.story and n.story.stage is Stage.DRAIN_REQUESTED
    assert "Xid 79" in n.story.reason
    [bench] = feed(b, result(drain, at_s=2))  # the drain happened: now, and only now, benchmark
    assert isinstance(bench, RunBenchmark) and bench.payload.nodes == ("n1",)
    assert bench.payload.window == f"{episode(1)}/benchmark" and "Xid 79" in bench.payload.reason
    n = b.nodes["n1"]
    assert n.quarantined and n.story and n.story.stage is Stage.BENCHMARKING
    assert feed(b, result(bench, at_s=3)) == []  # the verdict comes with BenchmarkCompleted
    [release] = feed(b, benchmark(at_s=3, trigger=bench))
    assert isinstance(release, ReleaseNodes) and release.payload.nodes == ("n1",)
    n = b.nodes["n1"]
    assert n.quarantined and n.story and n.story.stage is Stage.RELEASING  # asked, not done
    assert feed(b, result(release, at_s=4)) == []
    n = b.nodes["n1"]
    assert n.status is NodeStatus.IN_SERVICE and n.story is None and n.episodes == 1
    # The next fatal XID starts a new episode, named by its time, with new trigger ids.
    assert decided(b, at_s=5).payload.window == f"{episode(5)}/quarantine"


def test_a_failed_verdict_keeps_the_node_drained_and_says_so() -> None:
    b = brain()
    bench = drained(b)
    [kept] = feed(b, benchmark(verdict="fail", at_s=3, trigger=bench))
    assert isinstance(kept, Notify)
    assert kept.payload.title == "Node n1 stays quarantined: benchmark fail"
    assert "slow" in kept.payload.text and "Xid 79" in kept.payload.text
    n = b.nodes["n1"]
    assert n.quarantined and n.story and n.story.stage is Stage.KEPT
    assert n.story.problem == "slow"


def test_a_refused_drain_leaves_the_node_suspect_reported_and_unbenchmarked() -> None:
    b = brain()
    drain = decided(b)
    [told] = feed(b, result(drain, at_s=2, error=BREAKER, refused=True))
    assert isinstance(told, Notify)
    assert told.payload.title == "Node n1 not quarantined: drain was refused"
    assert BREAKER in told.payload.text and "stays in service" in told.payload.text
    assert "no benchmark" in told.payload.text and told.payload.reason == BREAKER
    n = b.nodes["n1"]
    assert n.status is NodeStatus.SUSPECT and not n.quarantined
    assert n.story and n.story.stage is Stage.DRAIN_FAILED and n.story.problem == BREAKER
    # A verdict arriving for a node in service moves nothing and releases nothing.
    assert feed(b, benchmark(at_s=3)) == []
    assert n.story is b.nodes["n1"].story
    # A later fatal XID asks again, as a new episode (the breaker may allow it by then).
    again = decided(b, at_s=10)
    assert again.payload.window == f"{episode(10)}/quarantine" and again.event_id != drain.event_id


def test_a_failed_drain_is_told_as_failed_not_refused() -> None:
    b = brain()
    [told] = feed(b, result(decided(b), at_s=2, error="TemporaryError: slurmctld down"))
    assert told.payload.title == "Node n1 not quarantined: drain failed"  # type: ignore[attr-defined]


def test_a_failed_benchmark_keeps_the_node_drained_and_says_so() -> None:
    b = brain()
    bench = drained(b)
    [told] = feed(b, result(bench, at_s=3, error="benchmark exited 1: no GPU"))
    assert isinstance(told, Notify)
    assert told.payload.title == "Node n1 stays quarantined: benchmark failed"
    n = b.nodes["n1"]
    assert n.quarantined and n.story and n.story.stage is Stage.BENCHMARK_FAILED


def test_a_failed_release_keeps_the_node_drained_and_says_so() -> None:
    b = brain()
    [release] = feed(b, benchmark(at_s=3, trigger=drained(b)))
    [told] = feed(b, result(release, at_s=4, error="PermanentError: node unknown"))
    assert told.payload.title == "Node n1 stays quarantined: release failed"  # type: ignore[attr-defined]
    assert b.nodes["n1"].quarantined


def test_redelivered_and_stale_results_change_nothing() -> None:
    b = brain()
    drain = decided(b)
    success = result(drain, at_s=2)
    [bench] = feed(b, success)
    state = b.nodes["n1"]
    assert feed(b, success, success) == [] and b.nodes["n1"].story == state.story
    # A refusal of the same trigger arriving after its success does not undo the drain.
    assert feed(b, result(drain, at_s=3, error=BREAKER, refused=True)) == []
    assert b.nodes["n1"].quarantined
    # After the release, the old episode's results are history: nothing moves.
    [release] = feed(b, benchmark(at_s=3, trigger=bench))
    feed(b, result(release, at_s=4))
    ended_state = b.nodes["n1"]
    assert feed(b, success, result(release, at_s=4)) == []
    assert b.nodes["n1"].story is None and b.nodes["n1"].episodes == ended_state.episodes


def test_a_dry_run_result_moves_nothing() -> None:
    b = brain()
    drain = decided(b)
    assert feed(b, result(drain, at_s=2, dry_run=True)) == []
    assert b.nodes["n1"].status is NodeStatus.SUSPECT


def test_a_benchmark_never_follows_a_decision_alone() -> None:
    b = brain()
    decided(b)
    # An operator's (or stray) benchmark on a node whose drain has not succeeded: no release.
    assert feed(b, benchmark(at_s=2)) == []
    assert b.nodes["n1"].story and b.nodes["n1"].story.stage is Stage.DRAIN_REQUESTED


def test_a_node_drained_by_someone_else_is_out_of_service_but_not_ours() -> None:
    b = brain()
    assert feed(b, scheduler_says("n1", "DRAINED", at_s=1)) == []
    n = b.nodes["n1"]
    assert n.out_of_service_by_scheduler and n.status is NodeStatus.IN_SERVICE
    assert n.scheduler and n.scheduler.reason == "admin"
    feed(b, scheduler_says("n1", "AVAILABLE", at_s=2), scheduler_says("n1", "DOWN", at_s=1.5))
    assert not b.nodes["n1"].out_of_service_by_scheduler  # the older report is ignored


def test_a_node_resumed_by_someone_else_ends_the_story() -> None:
    b = brain()
    drained(b)
    # The scheduler's view from before our drain changes nothing...
    feed(b, scheduler_says("n1", "AVAILABLE", at_s=1.5))
    assert b.nodes["n1"].quarantined
    # ...a later one saying it takes work again means someone resumed it.
    feed(b, scheduler_says("n1", "AVAILABLE", at_s=9))
    n = b.nodes["n1"]
    assert n.status is NodeStatus.IN_SERVICE and n.episodes == 1


def test_a_node_set_result_reaches_each_node_and_each_is_benchmarked() -> None:
    b = brain()
    events: list[Event] = []
    for i in range(5):
        events += [running(f"j{i}", at_s=i * 60), ended(f"j{i}", at_s=i * 60 + 30)]
    [drain] = [t for t in feed(b, *events) if isinstance(t, QuarantineNodes)]
    assert drain.subject == "nodeset:n1,n2"  # the result will be keyed by the node set
    benches = feed(b, result(drain, at_s=400))
    assert sorted((t.type, t.subject, t.payload.nodes) for t in benches) == [  # type: ignore[attr-defined]
        ("RunBenchmark", "n1", ("n1",)),
        ("RunBenchmark", "n2", ("n2",)),
    ]
    assert b.nodes["n1"].quarantined and b.nodes["n2"].quarantined


def test_replay_decides_the_same_story() -> None:
    live = brain()
    inputs: list[Event] = [xid("n1", 79, at_s=1), xid("n2", 79, at_s=1)]
    [drain1, drain2] = feed(live, *inputs)
    inputs += [result(drain1, at_s=2), result(drain2, at_s=2, error=BREAKER, refused=True)]
    [bench, refused] = feed(live, *inputs[2:])
    inputs.append(benchmark(at_s=3, trigger=bench))
    [release] = feed(live, inputs[-1])
    inputs.append(result(release, at_s=4))
    feed(live, inputs[-1])
    assert [bench.type, refused.type, release.type] == ["RunBenchmark", "Notify", "ReleaseNodes"]

    replay = brain()
    again = feed(replay, *inputs)
    assert [t.event_id for t in again] == [
        t.event_id for t in (drain1, drain2, bench, refused, release)
    ]
    assert {k: v.model_dump() for k, v in replay.nodes.items()} == {
        k: v.model_dump() for k, v in live.nodes.items()
    }


def test_a_fault_from_before_a_story_ended_folded_after_it_was_that_story_s() -> None:
    """History arriving late (a simulated day sent in a minute, a spool): a drain refused or a
    node released at the wall clock's time is folded before XIDs stamped earlier; judged by
    the order they came in, each began a story a replay, in event time, never saw (issue 40)."""
    for verdict in ("refused", "released"):
        b = brain()
        drain = decided(b, at_s=1)
        if verdict == "refused":
            feed(b, result(drain, at_s=600, error=BREAKER, refused=True))
        else:
            [bench] = feed(b, result(drain, at_s=600))
            [release] = feed(b, benchmark(at_s=601, trigger=bench))
            feed(b, result(release, at_s=602))
        assert feed(b, xid("n1", 79, at_s=300)) == [], verdict  # during the story
        [again] = feed(b, xid("n1", 79, at_s=900))  # after it
        assert again.payload.window == f"{episode(900)}/quarantine", verdict
