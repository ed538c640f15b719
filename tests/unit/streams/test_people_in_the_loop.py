"""What people do moves a node's state like any outcome: an operator's drain holds the node, a
release (whoever asked) returns it to service, a change seen in the scheduler ends a story, and
a decision held by a silence leaves the node suspect until rules decide afresh. What people read
(`streams.brain.views`) says so."""

from __future__ import annotations

from typing import Any

from centrality.commands import command
from schemas.events import NodeFactsObserved, Notify, QuarantineNodes, ReleaseNodes, RunBenchmark
from streams.brain.process import Brain
from streams.brain.views import Views, node_status
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.state.entities import NODES
from streams.state.story import NodeStatus, Stage
from streams.testing import benchmark, envelope, episode, heartbeat, result, scheduler_says, xid
from tests.unit.streams.test_quarantine_story import decided, drained, feed


def brain() -> Brain:
    return Brain(RuleEngine.load(StreamsSettings().rule_modules, {}))


def by(operator: str, cls: Any, node: str = "n1", **payload: Any) -> Any:
    return command(
        cls, operator=operator, cluster="test", subject=node, reason="replaced GPU 3", **payload
    )


def test_an_operators_drain_holds_the_node_until_an_operator_releases_it() -> None:
    b = brain()
    feed(b, heartbeat("n1", at_s=0))
    hold = by("alice", QuarantineNodes, nodes=("n1",))
    assert feed(b, result(hold, at_s=1)) == []  # nothing of a rule's story follows
    view = node_status(b.nodes["n1"])
    # Who took it out is a column, not a state: `nodes --state quarantined` lists it.
    assert (view.state, view.by, view.why) == ("quarantined", "operator/alice", "replaced GPU 3")
    assert view.stage == "held" and view.pending == "an operator's release" and view.gpus == 8
    assert feed(b, xid("n1", 79, at_s=2)) == []  # rules decide nothing about a held node
    bench = by("alice", RunBenchmark, nodes=("n1",))
    assert feed(b, result(bench, at_s=3), benchmark(at_s=4, trigger=bench)) == []
    n = b.nodes["n1"]
    assert n.story and n.story.stage is Stage.HELD and n.last_benchmark_verdict == "pass"
    release = command(
        ReleaseNodes, operator="bob", cluster="test", subject="n1", reason="GPU 3 reseated",
        nodes=("n1",),
    )  # fmt: skip
    feed(b, result(release, at_s=5))
    assert b.nodes["n1"].status is NodeStatus.IN_SERVICE
    # In service, the view says who returned it and in their words, and why it was out.
    back = node_status(b.nodes["n1"])
    assert (back.state, back.by) == ("in_service", "operator/bob")
    assert back.why == "released: GPU 3 reseated (out for: operator/alice: replaced GPU 3)"
    [drain] = feed(b, xid("n1", 79, at_s=6))  # in service again: decided like any other
    assert isinstance(drain, QuarantineNodes) and drain.payload.window == f"{episode(6)}/quarantine"


def test_a_release_from_outside_the_story_returns_a_kept_node_to_service() -> None:
    """The bug seen by hand: a ReleaseNodes emitted for a kept node told Slack "back in service"
    while the node stayed quarantined, and its next fatal XID decided nothing."""
    b = brain()
    bench = drained(b)
    feed(b, benchmark(verdict="fail", at_s=3, trigger=bench))
    assert b.nodes["n1"].story and b.nodes["n1"].story.stage is Stage.KEPT
    outside = by("bob", ReleaseNodes, nodes=("n1",))
    feed(b, result(outside, at_s=4))
    assert b.nodes["n1"].story is None and node_status(b.nodes["n1"]).state == "in_service"
    view = node_status(b.nodes["n1"])
    assert view.by == "operator/bob"
    assert (view.why or "").startswith("released: replaced GPU 3 (out for: fatal_xid: Xid 79")
    [drain] = feed(b, xid("n1", 79, at_s=5))
    assert isinstance(drain, QuarantineNodes)
    # A redelivered old result, once a new story began, changes nothing.
    feed(b, result(outside, at_s=4))
    assert b.nodes["n1"].story and b.nodes["n1"].story.stage is Stage.DRAIN_REQUESTED


def test_a_second_quarantine_keeps_the_first_why_and_adds_its_own() -> None:
    """An operator's quarantine of a node a rule already took out kept only the operator's
    words: the XID and the benchmark's reason were gone from every view."""
    b = brain()
    drained(b)
    feed(b, result(by("alice", QuarantineNodes, nodes=("n1",)), at_s=3))
    view = node_status(b.nodes["n1"])
    assert (view.state, view.by) == ("quarantined", "operator/alice")
    assert (view.why or "").startswith("replaced GPU 3 (earlier: fatal_xid: Xid 79")
    feed(b, result(by("bob", QuarantineNodes, nodes=("n1",)), at_s=4))
    why = node_status(b.nodes["n1"]).why or ""
    assert why.startswith("replaced GPU 3 (earlier: fatal_xid: Xid 79") and why.endswith(
        "; operator/alice: replaced GPU 3)"
    )


def test_a_node_resumed_by_hand_mid_story_stops_it_and_people_are_told_once() -> None:
    b = brain()
    bench = drained(b)
    assert b.nodes["n1"].story and b.nodes["n1"].story.stage is Stage.BENCHMARKING
    [told] = feed(b, scheduler_says("n1", "AVAILABLE", at_s=3, reason=None))
    assert isinstance(told, Notify) and told.payload.rule == "story_ended_by_hand"
    assert told.payload.title == "Node n1 returned to service outside Centrality"
    assert "Xid 79" in told.payload.text
    n = b.nodes["n1"]
    assert n.story is None and n.ended and n.ended.how == "resumed"
    assert node_status(n).why == f"resumed (out for: {n.ended.reason})"
    assert node_status(n).by == "scheduler" and n.ended.reason.startswith("fatal_xid: Xid 79")
    # The benchmark's verdict comes after: no release, nothing at all.
    assert feed(b, benchmark(at_s=4, trigger=bench)) == []
    assert feed(b, scheduler_says("n1", "AVAILABLE", at_s=3, reason=None)) == []  # once


def test_a_node_drained_by_someone_else_is_theirs_centrality_never_releases_it() -> None:
    b = brain()
    drained(b)
    [told] = feed(b, scheduler_says("n1", "DRAINED", at_s=3, reason="GPU swap, ticket 42"))
    assert isinstance(told, Notify) and "drained by someone else" in told.payload.title
    view = node_status(b.nodes["n1"])
    assert (view.state, view.by, view.why) == ("quarantined", "scheduler", "GPU swap, ticket 42")
    assert feed(b, xid("n1", 79, at_s=4)) == []  # not ours to drain, benchmark or release
    feed(b, scheduler_says("n1", "AVAILABLE", at_s=5, reason=None))
    [drain] = feed(b, xid("n1", 79, at_s=6))  # theirs no more: decided like any other
    assert isinstance(drain, QuarantineNodes)


def test_our_own_release_seen_by_the_scheduler_first_is_not_a_hand_made_change() -> None:
    b = brain()
    bench = drained(b)
    [release] = feed(b, benchmark(at_s=3, trigger=bench))
    assert feed(b, scheduler_says("n1", "AVAILABLE", at_s=4, reason=None)) == []
    assert b.nodes["n1"].ended is None
    feed(b, result(release, at_s=5))
    assert b.nodes["n1"].status is NodeStatus.IN_SERVICE
    view = node_status(b.nodes["n1"])
    assert (view.why or "").startswith("released: benchmark passed")
    assert "(out for: fatal_xid: Xid 79" in (view.why or "") and view.by == release.payload.rule


def test_a_decision_held_by_a_silence_leaves_the_node_held_and_rules_decide_afresh() -> None:
    b = brain()
    drain = decided(b)
    held = "held by silence s-1a2b3c until 2026-01-01T02:00:00+00:00 (alice: drivers)"
    [told] = feed(b, result(drain, at_s=2, error=held, refused=True, held_by="s-1a2b3c"))
    assert (
        isinstance(told, Notify) and told.payload.title == "Node n1 not quarantined: drain was held"
    )
    view = node_status(b.nodes["n1"])
    assert (view.state, view.problem) == ("held", held)
    [again] = feed(b, xid("n1", 79, at_s=3))  # after it: a new decision, a new id
    assert isinstance(again, QuarantineNodes) and again.event_id != drain.event_id


def test_a_view_is_published_only_when_what_people_read_changed() -> None:
    b = brain()
    views = Views(b.engine)
    feed(b, heartbeat("n1", at_s=0))
    first = b.nodes["n1"]
    beat = heartbeat("n1", at_s=30)
    feed(b, beat)
    assert first != b.nodes["n1"]  # the table changed (the heartbeat's time)
    assert views.status_change(NODES, first, b.nodes["n1"], beat) is None  # the view did not
    event = xid("n1", 79, at_s=31)
    before = b.nodes["n1"]
    feed(b, event)
    published = views.status_change(NODES, before, b.nodes["n1"], event)
    assert published is not None and published.type == "NodeStatusChanged"
    assert published.payload.state == "draining" and published.occurred_at == event.occurred_at
    assert published.payload.pending == "drain requested" and "Xid 79" in (
        published.payload.why or ""
    )
    again = views.status_change(NODES, before, b.nodes["n1"], event)
    assert again is not None and again.event_id == published.event_id  # redelivered: same id


def test_what_a_node_is_comes_from_its_facts_merged_from_every_source() -> None:
    b = brain()
    agent = NodeFactsObserved(
        **envelope("n1", 0),
        payload={"gpu_model": "NVIDIA H200", "gpu_count": 8, "gpu_serials": ["1653724026901"]},
    )
    scheduler = NodeFactsObserved(**envelope("n1", 1), payload={"partitions": ["gpu", "long"]})
    assert feed(b, agent, scheduler) == []
    facts = b.nodes["n1"].facts
    assert (facts.gpu_model, facts.partitions, facts.gpu_serials) == (
        "NVIDIA H200",
        ("gpu", "long"),
        ("1653724026901",),
    )  # the scheduler's report left the agent's alone
    view = node_status(b.nodes["n1"])
    assert (view.gpu_model, view.gpus, view.partitions) == ("NVIDIA H200", 8, ("gpu", "long"))


def test_a_late_report_of_a_nodes_facts_never_undoes_a_newer_one() -> None:
    """Node groups select policies by these facts: a spool sent after an outage, or a
    redelivery, must not move a node back into the group it has left."""
    b = brain()
    old = NodeFactsObserved(
        **envelope("n1", 0), payload={"gpu_model": "NVIDIA H100", "partitions": ["gpu"]}
    )
    new = NodeFactsObserved(**envelope("n1", 60), payload={"gpu_model": "NVIDIA H200"})
    scheduler = NodeFactsObserved(**envelope("n1", 30), payload={"partitions": ["long"]})
    feed(b, new, scheduler, old)  # the agent's first report comes last
    facts = b.nodes["n1"].facts
    # Each field keeps its newest report, whichever source sent it.
    assert (facts.gpu_model, facts.partitions) == ("NVIDIA H200", ("long",))
    stored = b.nodes["n1"]
    feed(b, old)
    assert b.nodes["n1"] == stored  # the late report changed nothing
