"""Every built-in rule, through the pure Brain (what live, tests and replay all run)."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from schemas import limits
from schemas.codec import DecodeError, decode, encode
from schemas.envelope import Event
from schemas.events import Trigger
from streams.brain.process import Brain
from streams.rules.registry import RuleConfigError, RuleEngine
from streams.settings import StreamsSettings
from streams.state.story import NodeStatus
from streams.testing import (
    T0,
    Story,
    benchmark,
    checkpoint,
    completed,
    ended,
    episode,
    health,
    heartbeat,
    result,
    running,
    sample,
    xid,
)


def brain(**config: dict[str, Any]) -> Brain:
    return Brain(RuleEngine.load(StreamsSettings().rule_modules, config))


def feed(b: Brain, *events: Event) -> list[Trigger]:
    return [t for e in events for t in b.handle(e)]


def kinds(triggers: list[Trigger]) -> Counter[tuple[str, str]]:
    return Counter((t.payload.rule, t.type) for t in triggers)


def failing_jobs(n: int, nodes: tuple[str, ...] = ("n1", "n2"), every_s: float = 60) -> list[Event]:
    out: list[Event] = []
    for i in range(n):
        job = f"slurm/t/{i}"
        out += [
            running(job, at_s=i * every_s, nodes=nodes),
            ended(job, at_s=i * every_s + 30, nodes=nodes),
        ]
    return out


# restart_incomplete_exit -------------------------------------------------------------------


def test_restart_waits_out_the_backoff_and_respects_max_restarts() -> None:
    b = brain(restart_incomplete_exit={"backoff_s": 100, "max_restarts": 3})
    job = "slurm/t/r"
    first = feed(b, running(job, 1), checkpoint(5, job, at_s=10), ended(job, attempt=1, at_s=20))
    assert [t.type for t in first] == ["RestartJob"]
    assert first[0].payload.checkpoint_uri == "s3://ckpt/step-5"
    # attempt 2 dies 30 s after the restart: inside the backoff, left alone
    assert feed(b, running(job, 2, at_s=25), ended(job, attempt=2, at_s=50)) == []
    # attempt 3 dies long after: restarted; attempt 4 is beyond max_restarts
    assert len(feed(b, running(job, 3, at_s=300), ended(job, attempt=3, at_s=400))) == 1
    assert feed(b, running(job, 4, at_s=600), ended(job, attempt=4, at_s=700)) == []
    assert b.jobs[job].restarts_requested == 2


def test_restart_is_decided_once_under_redelivery() -> None:
    b = brain()
    events = [running("slurm/t/x"), ended("slurm/t/x", at_s=5)]
    assert len(feed(b, *events)) == 1
    assert feed(b, *events) == []


def test_completed_or_cancelled_jobs_are_not_restarted() -> None:
    b = brain()
    assert feed(b, running("a"), completed("a", at_s=1), ended("a", "SUCCEEDED", at_s=2)) == []
    assert feed(b, running("c"), ended("c", "CANCELLED", at_s=2)) == []


# repeated_failures_on_node_set ---------------------------------------------------------------


def test_five_failures_on_the_same_nodes_ask_for_quarantine_and_notify_once() -> None:
    b = brain()
    triggers = feed(b, *failing_jobs(7))
    rule = "repeated_failures_on_node_set"
    node_set = [t for t in triggers if t.payload.rule == rule]
    assert sorted(t.type for t in node_set) == ["Notify", "QuarantineNodes"]
    assert all(t.payload.nodes == ("n1", "n2") for t in node_set)
    assert len(node_set[0].payload.caused_by) == 5
    # Asked, not done: both nodes are suspect (still in service) until the drain succeeds.
    assert {b.nodes[n].status for n in ("n1", "n2")} == {NodeStatus.SUSPECT}
    assert b.node_sets["nodeset:n1,n2"].quarantines == 1


def test_preemptions_and_cancellations_are_not_failures() -> None:
    b = brain()
    events: list[Event] = []
    for i in range(6):
        state = "PREEMPTED" if i % 2 else "CANCELLED"
        events += [running(f"p{i}", at_s=i * 10), ended(f"p{i}", state, at_s=i * 10 + 5)]
    assert not [t for t in feed(b, *events) if t.type == "QuarantineNodes"]
    assert b.nodes["n1"].failures == ()


def test_failures_on_other_node_sets_or_outside_the_window_do_not_add_up() -> None:
    b = brain(repeated_failures_on_node_set={"window": {"window_s": 600}})
    mixed = failing_jobs(3, ("n1", "n2")) + failing_jobs(3, ("n1", "n3"))
    assert not [t for t in feed(b, *mixed) if t.type == "QuarantineNodes"]
    b = brain(repeated_failures_on_node_set={"window": {"window_s": 600}})
    slow = failing_jobs(6, every_s=200)  # never 5 within 600 s
    assert not [t for t in feed(b, *slow) if t.type == "QuarantineNodes"]
    assert len(b.nodes["n1"].failures) == 6  # the per-node failure list still holds them all


def test_threshold_and_hopping_window_are_configurable() -> None:
    b = brain(
        repeated_failures_on_node_set={"threshold": 2, "window": {"window_s": 600, "hop_s": 60}}
    )
    triggers = feed(b, *failing_jobs(2, every_s=100))
    assert kinds(triggers)[("repeated_failures_on_node_set", "QuarantineNodes")] == 1


# fatal_xid and ecc_double_bit ----------------------------------------------------------------


def test_fatal_xid_asks_for_quarantine_once_per_episode() -> None:
    b = brain()
    assert feed(b, xid(code=13)) == []  # an application error, not the GPU
    first = feed(b, xid(code=79, at_s=1), xid(code=48, at_s=2))
    assert [t.type for t in first] == ["QuarantineNodes"]
    assert first[0].payload.nodes == ("n1",)
    assert b.nodes["n1"].status is NodeStatus.SUSPECT and not b.nodes["n1"].quarantined


def test_fatal_xid_set_is_configurable() -> None:
    b = brain(fatal_xid={"xids": [13]})
    assert len(feed(b, xid(code=13))) == 1
    assert feed(brain(fatal_xid={"xids": [13]}), xid(code=79)) == []


def test_double_bit_ecc_quarantines_when_the_counter_rises_only() -> None:
    b = brain()
    assert feed(b, sample(at_s=0, ecc_single_bit=9, ecc_double_bit=0)) == []
    [drain] = feed(b, sample(at_s=1, ecc_double_bit=1))
    assert drain.type == "QuarantineNodes"
    # drained, benchmarked, released: the same old count must not quarantine again
    [bench] = feed(b, result(drain, at_s=2))
    [release] = feed(b, benchmark(at_s=3, trigger=bench))
    assert release.type == "ReleaseNodes" and feed(b, result(release, at_s=4)) == []
    assert feed(b, sample(at_s=5, ecc_double_bit=1)) == []
    again = feed(b, sample(at_s=6, ecc_double_bit=2))
    assert {t.payload.window for t in again} == {f"{episode(6)}/quarantine"}


# heartbeat_lost and checkpoint_stall (clock ticks) ---------------------------------------------


def at(s: float) -> Any:
    return T0 + timedelta(seconds=s)


def test_heartbeat_lost_notifies_once_per_silence() -> None:
    b = brain(heartbeat_lost={"limit_s": 60})
    feed(b, heartbeat(at_s=0))
    assert b.tick(at(50)) == []
    [lost] = b.tick(at(70))
    assert lost.type == "Notify" and lost.payload.nodes == ("n1",)
    assert b.tick(at(80)) == []
    feed(b, heartbeat(at_s=90))
    assert len(b.tick(at(200))) == 1  # a new silence is a new incident


def slow_beat(at_s: float, interval_s: float) -> Event:
    beat = heartbeat(at_s=at_s)
    return beat.model_copy(
        update={"payload": beat.payload.model_copy(update={"interval_s": interval_s})}
    )


def test_a_node_that_heartbeats_slowly_is_lost_only_after_missing_its_own_beats() -> None:
    """An agent set to beat every 300 s was called lost 120 s after each beat."""
    b = brain()
    feed(b, slow_beat(0, interval_s=300))
    assert [t for t in b.tick(at(600)) if t.payload.rule == "heartbeat_lost"] == []
    feed(b, slow_beat(300, interval_s=300))
    [lost] = [t for t in b.tick(at(1201)) if t.payload.rule == "heartbeat_lost"]
    assert "limit 900 s" in lost.payload.reason


def test_a_declared_interval_never_stretches_the_limit_past_its_maximum() -> None:
    b = brain(heartbeat_lost={"limit_max_s": 1000})
    feed(b, slow_beat(0, interval_s=86_400))
    [lost] = [t for t in b.tick(at(1001)) if t.payload.rule == "heartbeat_lost"]
    assert "limit 1000 s" in lost.payload.reason


def test_checkpoint_stall_notifies_running_jobs_only() -> None:
    b = brain(checkpoint_stall={"limit_s": 100})
    feed(b, running("s", at_s=0), checkpoint(1, "s", at_s=50), running("done", at_s=0))
    feed(b, ended("done", "CANCELLED", at_s=10))
    assert b.tick(at(120)) == []
    [stall] = [t for t in b.tick(at(151)) if t.payload.rule == "checkpoint_stall"]
    assert stall.payload.job_id == "s"
    assert b.tick(at(160)) == []


def test_replay_gives_the_same_decisions_as_live() -> None:
    events = [*failing_jobs(6), xid("n9", 79, at_s=5), heartbeat("n9", at_s=0)]
    ids = [{t.event_id for t in feed(brain(), *events) + brain().tick(at(1000))} for _ in range(2)]
    assert ids[0] == ids[1] and len(ids[0]) > 5


def test_the_longest_node_name_the_contract_allows_can_be_named_in_every_decision() -> None:
    """A node subject longer than a node name once made every clock tick fail to build its
    Notify (and dead-letter) for as long as the node was in the table."""
    name = "n" * limits.NODE_NAME
    b = brain()
    feed(b, heartbeat(name, at_s=0), xid(name, 79, at_s=1))
    lost = [t for t in b.tick(T0 + timedelta(hours=1)) if t.payload.rule == "heartbeat_lost"]
    assert [t.payload.nodes for t in lost] == [(name,)]
    too_long = heartbeat(name).model_copy(update={"subject": name + "x"})
    with pytest.raises(DecodeError) as info:
        decode(encode(too_long))
    assert info.value.reason == "limit" and info.value.detail.startswith("subject")


def test_a_flapping_check_decides_only_after_for_count_observations_in_a_row() -> None:
    config = {"repeated_health_failures": {"threshold": 1, "for_count": 3}}
    story = Story(config=config)
    story.tell(heartbeat("n1", 0))
    assert story.tell(health("n1", "nvlink", "CRITICAL", 1)) == []
    assert story.tell(health("n1", "nvlink", "CRITICAL", 2)) == []
    assert story.tell(health("n1", "nvlink", "OK", 3)) == []  # it flapped: the count starts again
    assert story.tell(health("n1", "nvlink", "CRITICAL", 4)) == []
    assert story.tell(health("n1", "nvlink", "CRITICAL", 5)) == []
    [drain] = story.tell(health("n1", "nvlink", "CRITICAL", 6))
    assert drain.type == "QuarantineNodes" and drain.payload.fault == "health:nvlink"


def test_a_fatal_xid_never_waits() -> None:
    with pytest.raises(RuleConfigError, match="a fatal XID never waits"):
        Story(config={"fatal_xid": {"for_count": 2}})
