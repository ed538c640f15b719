"""Incidents: what shares a cause is one incident, each node's status names it, and it is
resolved once every member is settled."""

from __future__ import annotations

from centrality.commands import command
from schemas.events import QuarantineNodes, RunBenchmark
from streams.brain.views import node_status
from streams.testing import Story, benchmark, facts, heartbeat, result, scheduler_says, xid

FLEET = tuple(f"gpu-{i:03d}" for i in range(1, 41))


def beating(story: Story, nodes: tuple[str, ...], at_s: float) -> None:
    story.tell(*(heartbeat(n, at_s) for n in nodes))


def test_a_silent_fleet_is_one_incident_and_every_node_unreachable() -> None:
    story = Story()
    beating(story, FLEET, 0)
    decided = story.wait(200)  # heartbeat_lost's limit is 120 s
    assert {t.type for t in decided} == {"Notify"}
    [incident] = story.incidents.values()
    assert incident.nodes == "gpu-[001-040]" and incident.nodes_count == 40
    assert incident.states == {"unreachable": 40} and incident.state == "open"
    assert incident.title.startswith("40 nodes in cluster test stopped sending heartbeats")
    [key] = story.incidents
    views = [node_status(story.nodes[n]) for n in FLEET]
    assert {(v.state, v.incident) for v in views} == {("unreachable", key)}
    assert views[0].why is not None and "no heartbeat" in views[0].why


def test_heartbeats_that_resume_resolve_it_and_the_nodes_are_back_by_themselves() -> None:
    story = Story()
    beating(story, FLEET, 0)
    story.wait(200)
    beating(story, FLEET, 210)
    [incident] = story.incidents.values()
    assert incident.state == "resolved" and incident.states == {"in_service": 40}
    assert {node_status(story.nodes[n]).state for n in FLEET} == {"in_service"}
    assert {node_status(story.nodes[n]).incident for n in FLEET} == {None}


def test_nodes_under_one_switch_name_the_switch() -> None:
    story = Story()
    story.tell(*(facts(n, 0, switch="s12") for n in FLEET[:3]))
    beating(story, FLEET[:3], 0)
    story.wait(200)
    [incident] = story.incidents.values()
    assert incident.domain == "switch s12"
    assert incident.title.startswith("3 nodes under switch s12 stopped sending heartbeats")


def test_fatal_xids_at_once_are_one_incident_through_the_whole_story() -> None:
    story = Story()
    beating(story, FLEET[:3], 0)
    drains = [t for n in FLEET[:3] for t in story.tell(xid(n, 79, at_s=1))]
    assert [t.type for t in drains] == ["QuarantineNodes"] * 3
    [(key, incident)] = story.incidents.items()
    assert incident.kind == "xid:79" and incident.severity == "critical"
    assert incident.states == {"draining": 3}
    assert "3 nodes in cluster test hit Xid 79" in incident.title
    benchmarks = [t for d in drains for t in story.tell(result(d, 2))]
    assert all(isinstance(t, RunBenchmark) for t in benchmarks)
    assert story.incidents[key].states == {"benchmarking": 3}
    for b in benchmarks:
        story.tell(result(b, 3))
    releases = [
        t
        for b, n in zip(benchmarks, FLEET, strict=False)
        for t in story.tell(benchmark(n, "pass", 4, b))
    ]
    assert story.incidents[key].state == "open"  # releases asked for, not done
    for release in [t for t in releases if t.type == "ReleaseNodes"]:
        story.tell(result(release, 5))
    assert story.incidents[key].state == "resolved"
    assert story.incidents[key].states == {"in_service": 3}


def test_a_refused_drain_is_in_the_incident_with_the_breakers_words() -> None:
    story = Story()
    beating(story, FLEET[:2], 0)
    [drain] = [t for t in story.tell(xid(FLEET[0], 79, at_s=1)) if isinstance(t, QuarantineNodes)]
    story.tell(result(drain, 2, error="circuit breaker: 3 of 10 nodes", refused=True))
    [incident] = story.incidents.values()
    assert incident.refused == "circuit breaker: 3 of 10 nodes"
    assert incident.state == "resolved" and incident.states == {"suspect": 1}


def test_faults_of_a_kind_apart_by_more_than_the_window_are_two_incidents() -> None:
    story = Story()
    story.tell(xid(FLEET[0], 79, at_s=1))  # no heartbeats: never lost either
    story.tell(xid(FLEET[1], 79, at_s=3600))
    titles = sorted(i.title for i in story.incidents.values())
    assert len(titles) == 2 and all(": Xid 79" in t for t in titles)


def test_faults_of_other_kinds_are_other_incidents() -> None:
    story = Story()
    beating(story, FLEET[:2], 0)
    story.tell(xid(FLEET[0], 79, at_s=1), xid(FLEET[1], 48, at_s=2))
    assert sorted(i.kind for i in story.incidents.values()) == ["xid:48", "xid:79"]


def test_steps_people_must_see_are_the_incidents_notes() -> None:
    story = Story()
    beating(story, FLEET[:2], 0)
    drains = [t for n in FLEET[:2] for t in story.tell(xid(n, 79, at_s=1))]
    benches = [t for d in drains for t in story.tell(result(d, 2))]
    for b in benches:
        story.tell(result(b, 3))
    story.tell(benchmark(FLEET[0], "fail", 4, benches[0]))
    story.tell(scheduler_says(FLEET[1], "AVAILABLE", 5, reason=None))  # resumed by someone
    [incident] = story.incidents.values()
    assert incident.notes == (
        f"{FLEET[0]}: kept out: benchmark fail: slow",
        f"{FLEET[1]}: resumed by hand",
    )
    assert incident.notes_count == 2
    assert incident.states == {"quarantined": 1, "in_service": 1} and incident.state == "open"


def test_a_hold_is_a_note_naming_the_silence() -> None:
    story = Story()
    beating(story, FLEET[:1], 0)
    [drain] = [t for t in story.tell(xid(FLEET[0], 79, at_s=1)) if isinstance(t, QuarantineNodes)]
    why = "held by silence s-1 until 2026-01-01T02:00:00+00:00 (alice: drivers)"
    story.tell(result(drain, 2, error=why, refused=True, held_by="s-1"))
    [incident] = story.incidents.values()
    assert incident.states == {"held": 1} and incident.held_by == ("s-1",)
    assert incident.notes == (f"{FLEET[0]}: {why}",) and incident.refused is None


def test_a_node_people_quarantined_is_settled_though_it_reads_quarantined() -> None:
    """`held` no longer names an operator's quarantine (its state is `quarantined`, `by` says
    who): the incident still counts the node as settled, and resolves."""
    story = Story()
    beating(story, FLEET[:1], 0)
    [drain] = [t for t in story.tell(xid(FLEET[0], 79, at_s=1)) if isinstance(t, QuarantineNodes)]
    story.tell(result(drain, 2))
    [(key, incident)] = story.incidents.items()
    assert incident.state == "open" and incident.states == {"benchmarking": 1}
    hold = command(
        QuarantineNodes, operator="alice", cluster="test", subject=FLEET[0], reason="RMA",
        nodes=(FLEET[0],),
    )  # fmt: skip
    story.tell(result(hold, 3))
    view = node_status(story.nodes[FLEET[0]])
    assert (view.state, view.by) == ("quarantined", "operator/alice")
    assert story.incidents[key].state == "resolved"
    assert story.incidents[key].states == {"quarantined": 1}
