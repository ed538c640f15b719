"""`centrality shadow report`'s comparison: shadow decisions beside the live ones of their types,
per rule and type, with the targets where they differ, first first."""

from __future__ import annotations

from datetime import timedelta

from schemas.events import Trigger
from streams.history.shadow import Decided, report
from streams.testing import T0, Story, health, xid


def as_recorded(t: Trigger, outcome: str | None = "succeeded") -> Decided:
    return Decided(
        trigger_id=str(t.event_id),
        type=t.type,
        rule=t.payload.rule,
        cluster=t.cluster,
        subject=t.subject,
        nodes=tuple(getattr(t.payload, "nodes", ())),
        occurred_at=t.occurred_at,
        reason=t.payload.reason,
        shadow=t.payload.shadow,
        outcome=outcome,
        error=None,
    )


def test_shadow_decisions_are_set_beside_what_was_done() -> None:
    # A stricter health rule tried in shadow beside the fatal-XID rule, live.
    story = Story(config={"repeated_health_failures": {"threshold": 1, "mode": "shadow"}})
    decided = story.tell(
        health("n1", "gpu", "CRITICAL", at_s=10),  # both: alike (shadow first, moving nothing)
        xid("n1", 79, at_s=20),
        health("n2", "gpu", "CRITICAL", at_s=30),  # shadow only
        xid("n3", 79, at_s=40),  # live only
    )
    recorded = [as_recorded(t, "failed" if t.subject == "n2" else "succeeded") for t in decided]
    found = report(recorded, T0, T0 + timedelta(hours=1))
    assert found.shadow_rules == ["repeated_health_failures"]
    tallies = {(t.side, t.rule, t.type): t for t in found.tallies}
    assert set(tallies) == {
        ("shadow", "repeated_health_failures", "QuarantineNodes"),
        ("live", "fatal_xid", "QuarantineNodes"),
    }  # the live story's later decisions are of types no shadow rule decided
    shadow = tallies[("shadow", "repeated_health_failures", "QuarantineNodes")]
    assert (shadow.decisions, shadow.first_targets) == (2, ("test/n1", "test/n2"))
    assert shadow.outcomes == {"planned": 1, "would be refused": 1}
    assert tallies[("live", "fatal_xid", "QuarantineNodes")].outcomes == {"succeeded": 2}
    assert found.agreements == 1
    assert [(d.side, d.target, d.rule) for d in found.differences] == [
        ("shadow", "n2", "repeated_health_failures"),
        ("live", "n3", "fatal_xid"),
    ]
    assert report(recorded, T0, T0, limit=1).differences_total == 2


def test_nothing_in_shadow_is_an_empty_report() -> None:
    live = Story().tell(xid("n1", 79, at_s=1))
    found = report([as_recorded(t) for t in live], T0, T0 + timedelta(hours=1))
    assert (found.shadow_rules, found.tallies, found.differences) == ([], [], [])
