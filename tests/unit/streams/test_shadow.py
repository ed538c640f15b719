"""Shadow mode per rule, through the pure brain: a shadow rule decides as it would live, its
decisions are marked and named apart, and nothing takes them as made: no state moves, no story
starts, and promoting the rule (a config change) decides afresh."""

from __future__ import annotations

from streams.state.story import NodeStatus
from streams.testing import Story, ended, health, result, running, xid

SHADOW = {"mode": "shadow"}


def test_a_shadow_quarantine_is_recorded_and_drains_nothing() -> None:
    live, shadow = Story(), Story(config={"fatal_xid": SHADOW})
    fault = xid("n1", 79, at_s=1)
    [decided] = live.tell(fault)
    [recorded] = shadow.tell(fault)
    assert recorded.payload.shadow and not decided.payload.shadow
    assert recorded.event_id != decided.event_id  # never taken for, nor blocking, the live one
    assert recorded.payload.model_dump(exclude={"shadow"}) == decided.payload.model_dump(
        exclude={"shadow"}
    )
    assert recorded.type == "QuarantineNodes"
    assert live.nodes["n1"].status is NodeStatus.SUSPECT
    node = shadow.nodes["n1"]
    assert node.status is NodeStatus.IN_SERVICE and node.story is None
    # The worker only plans it; that result moves nothing either: no benchmark, no story.
    assert shadow.tell(result(recorded, at_s=2)) == []
    assert shadow.nodes["n1"].status is NodeStatus.IN_SERVICE and shadow.nodes["n1"].story is None
    # A later XID is decided again: nothing a shadow rule decides takes the node out, so no
    # story holds it back, and an episode is named by when it began (a replay names it so too).
    [again] = shadow.tell(xid("n1", 79, at_s=3))
    assert again.payload.shadow and again.event_id != recorded.event_id


def test_a_shadow_rule_beside_live_ones_leaves_them_deciding_as_before() -> None:
    config = {"repeated_health_failures": {"threshold": 2, **SHADOW}}
    story = Story(config=config)
    checks = [health("n1", "gpu", "CRITICAL", at_s=t) for t in (1, 2)]
    [shadowed] = story.tell(*checks)
    assert shadowed.payload.rule == "repeated_health_failures" and shadowed.payload.shadow
    [drain] = story.tell(xid("n1", 79, at_s=3))  # the live rule, as if the other were not there
    assert drain.payload.rule == "fatal_xid" and not drain.payload.shadow
    assert story.nodes["n1"].status is NodeStatus.SUSPECT


def test_a_shadow_decision_about_a_node_set_reaches_no_node() -> None:
    story = Story(config={"repeated_failures_on_node_set": SHADOW})
    decided = []
    for attempt in range(1, 6):
        decided += story.tell(
            running("slurm/test/7", attempt, at_s=attempt * 60.0),
            ended("slurm/test/7", attempt=attempt, at_s=attempt * 60.0 + 30),
        )
    shadowed = [t for t in decided if t.payload.rule == "repeated_failures_on_node_set"]
    assert {t.type for t in shadowed} == {"QuarantineNodes", "Notify"}
    assert all(t.payload.shadow for t in shadowed)
    assert {story.nodes[n].status for n in ("n1", "n2")} == {NodeStatus.IN_SERVICE}


def test_a_shadow_restart_is_not_taken_as_requested() -> None:
    story = Story(config={"restart_incomplete_exit": SHADOW})
    [restart] = story.tell(running(at_s=1), ended(at_s=2))
    assert restart.type == "RestartJob" and restart.payload.shadow
    assert story.jobs["slurm/test/42"].restarts == ()


def test_promoting_a_rule_is_a_config_change_and_it_decides_afresh() -> None:
    cooled = {"cooldown_s": 3600.0}
    shadow = Story(config={"fatal_xid": {**SHADOW, **cooled}})
    [recorded] = shadow.tell(xid("n1", 79, at_s=1))
    promoted = Story(config={"fatal_xid": cooled})
    promoted.brain.tables = shadow.brain.tables  # the tables a restarted worker restores
    [drain] = promoted.tell(xid("n1", 79, at_s=2))
    assert not drain.payload.shadow and drain.event_id != recorded.event_id
    assert promoted.nodes["n1"].status is NodeStatus.SUSPECT
