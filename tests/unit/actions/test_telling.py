"""What the teller tells of an incident, given what it told before: a parent shown when what it
shows changed, a reply once per step people must see."""

from __future__ import annotations

from typing import Any

from actions.ledger import ThreadRef, Told
from actions.slack.notifier import Delivery
from actions.slack.telling import Telling, telling, told_after
from schemas.events.incidents import IncidentResolved, IncidentUpdated
from tests.support.incidents import OPENED, incident

THREAD = ThreadRef(channel="C1", ts="1.1")
POSTED = Delivery("posted", THREAD)


def tell(event_told: Told | None, **payload: Any) -> Telling:
    return telling("inc-1", incident(cls=IncidentUpdated, **payload).payload, event_told)


def resolve(event_told: Told | None, **payload: Any) -> Telling:
    end = OPENED.replace(hour=23)
    done = incident(cls=IncidentResolved, state="resolved", resolved_at=end, **payload)
    return telling("inc-1", done.payload, event_told)


def after(plan: Telling, told: Told | None = None, how: str = "posted") -> Told:
    done = Delivery(how, THREAD)  # type: ignore[arg-type]
    parent = done if plan.parent is not None else None
    return told_after(told, plan, parent, [done] * len(plan.replies), THREAD, False)


def test_a_new_incident_shows_its_parent_and_nothing_twice() -> None:
    first = tell(None)
    assert first.parent is not None and first.replies == ()
    told = after(first)
    assert told.thread == THREAD and told.parent == first.fingerprint
    assert tell(told).empty  # the same record again (a redelivery, a replay): nothing


def test_a_move_updates_the_parent_without_a_reply() -> None:
    told = after(tell(None))
    moved = tell(told, states={"unreachable": 140, "in_service": 3})
    assert moved.parent is not None and moved.replies == ()
    assert "back in service 3" in moved.parent.text


def test_a_refusal_is_told_once_with_its_figures() -> None:
    told = after(tell(None))
    why = "circuit breaker: quarantining 20 of 100 nodes (20 %) > 10 % within 3600 s"
    refused = tell(told, refused=why)
    assert [r.step for r in refused.replies] == ["refused"]
    assert why in str(refused.replies[0].message.blocks)
    again = tell(after(refused, told), refused=why, states={"unreachable": 100})
    assert again.replies == () and again.parent is not None


def test_new_notes_are_told_in_one_reply_and_resolution_once() -> None:
    told = after(tell(None))
    notes = ("gpu-07: kept out: benchmark fail: slow", "gpu-09: resumed by hand")
    two = tell(told, notes=notes, notes_count=2)
    assert [r.step for r in two.replies] == ["notes"]
    assert all(n in str(two.replies[0].message.blocks) for n in notes)
    told = after(two, told)
    assert told.notes == 2 and tell(told, notes=notes, notes_count=2).empty
    third = "gpu-11: escalated to a person for hardware service"
    one = tell(told, notes=(*notes, third), notes_count=3)
    told_now = str(one.replies[0].message.blocks)
    assert third in told_now and notes[0] not in told_now
    told = after(one, told)
    done = resolve(
        told, states={"in_service": 141, "escalated": 2}, notes=(*notes, third), notes_count=3
    )
    assert [r.step for r in done.replies] == ["resolved"]
    assert done.parent is not None and done.parent.text.startswith("Resolved: ")
    told = after(done, told)
    assert told.resolved and told.notes == 3


def test_a_step_not_told_is_tried_again_and_a_digested_parent_is_never_updated() -> None:
    plan = tell(after(tell(None)), refused="breaker")
    lost = after(plan, how="lost")
    assert not lost.refused and [r.step for r in tell(lost, refused="breaker").replies] == [
        "refused"
    ]
    digested = Told(incident="inc-1", thread=THREAD, digest=True)
    assert tell(digested, states={"unreachable": 1}).parent is None


def test_a_resolution_never_counts_a_node_left_in_service_as_kept_out() -> None:
    states = {"in_service": 3, "held": 2, "suspect": 1, "escalated": 1}
    done = resolve(after(tell(None)), states=states)
    said = str(done.replies[0].message.blocks)
    assert "3 back in service; 3 left in service undrained (held 2 · suspect 1)" in said
    assert "1 kept out of service (escalated 1)" in said
