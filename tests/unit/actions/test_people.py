"""Operators and silences in the action worker, without Kafka: who may command what, what a
silence holds (and what it never holds), `--force`, and that people are told why."""

from __future__ import annotations

import json
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from actions.silences import Silences
from actions.worker import ActionWorker, Rejected
from centrality.commands import command
from centrality.slack_fake import SlackFake
from schemas.codec import encode
from schemas.envelope import utcnow
from schemas.events import (
    ActionFailed,
    ActionHeld,
    ActionSucceeded,
    QuarantineNodes,
    ReleaseNodes,
    RestartJob,
)
from tests.support.operators import ALICE, BOB, MALLORY, TRUSTED, expired, signed, silence
from tests.support.triggers import SIGNING, TRIGGER_KEY, notify, quarantine, restart, signature_of
from tests.unit.actions.test_dispatch import Rig


def by_alice(cls: Any = QuarantineNodes, cluster: str = "test", **payload: Any) -> Any:
    payload.setdefault("nodes", ("n1",)) if cls is not RestartJob else None
    return command(
        cls,
        operator=payload.pop("operator", "alice"),
        cluster=cluster,
        subject=payload.pop("subject", "n1"),
        reason="GPU 3 replaced",
        **payload,
    )


def silences(*events: Any) -> Silences:
    known = Silences(TRUSTED)
    for event in events:
        known.take(*signed(event))
    return known


def with_silences(rig: Rig, known: Silences) -> Rig:
    rig.dispatcher.silences = known
    return rig


# --- silences ------------------------------------------------------------------------------


async def test_a_silence_holds_a_rules_decision_and_says_so_where_people_read(
    slack: SlackFake,
) -> None:
    added = silence()
    rig = with_silences(Rig(slack), silences(added))
    await rig.handle(restart())
    assert rig.adapter.calls == []  # not carried out
    assert rig.of(ActionFailed) == []  # a hold is no failure
    [held] = rig.of(ActionHeld)
    assert held.payload.held_by == added.payload.silence_id
    assert held.payload.until == added.payload.ends_at
    assert held.payload.why == "alice: driver upgrade"  # the silence's own words
    assert held.payload.said.startswith(f"held by silence {added.payload.silence_id} until ")
    [post] = slack.posts  # told once, naming the silence and its end
    assert f"held: held by silence {added.payload.silence_id}" in post["text"]
    entry = rig.ledger.get(restart().event_id)
    assert entry is not None and entry.outcome == "held"  # redelivered: not done after it
    assert entry.held_by == added.payload.silence_id


async def test_a_held_step_of_a_nodes_story_is_told_by_its_incident(slack: SlackFake) -> None:
    rig = with_silences(Rig(slack), silences(silence()))
    await rig.handle(quarantine(("n1",)))
    [held] = rig.of(ActionHeld)
    assert held.payload.nodes == ("n1",) and slack.posts == []


async def test_operators_commands_and_notifications_are_never_held(slack: SlackFake) -> None:
    rig = with_silences(Rig(slack), silences(silence()))
    await rig.handle(by_alice())
    await rig.handle(notify("test/n1", "w1"))
    assert rig.adapter.drained == {"n1": "centrality: GPU 3 replaced"}
    done = rig.of(ActionSucceeded)
    assert [d.payload.operator for d in done] == ["alice", None]
    assert done[0].payload.reason == "GPU 3 replaced" and not done[0].payload.forced


@pytest.mark.parametrize(
    ("scope", "held"),
    [
        ({}, True),
        ({"nodes": "n[1-2]"}, True),
        ({"nodes": "n[3-4]"}, False),
        ({"rule": "repeat_failures"}, True),
        ({"rule": "fatal_xid"}, False),
        ({"action": "QuarantineNodes"}, True),
        ({"action": "quarantine_nodes"}, True),
        ({"action": "restart_job"}, False),
    ],
)
async def test_a_silence_holds_only_what_it_names(
    slack: SlackFake, scope: dict[str, str], held: bool
) -> None:
    rig = with_silences(Rig(slack, quarantine_max_share=0.5), silences(silence(**scope)))
    await rig.handle(quarantine(("n1", "n9")))  # held whole when the silence covers one
    assert bool(rig.of(ActionHeld)) is held and bool(rig.adapter.drained) is not held


async def test_a_silence_ends_by_itself_or_by_an_operator_and_elsewhere_holds_nothing(
    slack: SlackFake,
) -> None:
    over = silence(starts_at=utcnow() - timedelta(hours=2), duration_s=60)
    later = silence(starts_at=utcnow() + timedelta(hours=1))
    other = silence(cluster="other", operator="bob")
    ended = silence()
    known = Silences(TRUSTED)
    for event in (over, later, ended, expired(ended)):
        known.take(*signed(event))
    known.take(*signed(other, BOB))
    rig = with_silences(Rig(slack), known)
    await rig.handle(quarantine(("n1",)))
    assert rig.of(ActionFailed) == [] and rig.adapter.drained
    assert len(known.all()) == 4


def test_silences_nobody_trusted_may_set_are_ignored() -> None:
    known = Silences(TRUSTED)
    known.take(*signed(silence(), MALLORY))  # unknown operator
    known.take(*signed(silence(cluster="test", operator="bob"), BOB))  # not bob's cluster
    known.take(*signed(silence(operator="bob"), ALICE))  # alice signs as bob
    value, headers = signed(silence())
    known.take(value, [(k, v[:-4] + b"AAA=") if k == "centrality-signature" else (k, v)
                       for k, v in headers])  # fmt: skip
    known.take(encode(silence()), [])  # unsigned
    assert known.all() == []


# --- force, allowlist, authority -------------------------------------------------------------


async def test_force_passes_the_breaker_and_is_recorded_as_forced(slack: SlackFake) -> None:
    rig = Rig(slack, quarantine_max_share=0.1)  # 1 of 10 nodes
    await rig.handle(quarantine(("n1",), window="a"))
    await rig.handle(by_alice(nodes=("n2",)))
    [refused] = rig.of(ActionFailed)
    assert refused.payload.error.startswith("circuit breaker: quarantining 2 of 10")
    await rig.handle(by_alice(nodes=("n2",), force=True))
    forced = rig.of(ActionSucceeded)[-1]
    assert forced.payload.forced and forced.payload.operator == "alice"
    assert forced.payload.detail["forced"].startswith("circuit breaker passed by force:")
    assert set(rig.adapter.drained) == {"n1", "n2"}
    assert "*forced* past the circuit breakers" in json.dumps(slack.posts[-1]["blocks"])


async def test_an_action_not_allowed_is_refused_and_people_are_told(slack: SlackFake) -> None:
    rig = Rig(slack, allow={"test": ["notify"]})
    await rig.handle(restart())
    [refused] = rig.of(ActionFailed)
    assert refused.payload.error == "action restart_job is not enabled on cluster test"
    [post] = slack.posts
    assert "refused: action restart_job is not enabled on cluster test" in post["text"]


async def test_a_refusal_found_by_the_worker_is_recorded_and_told(slack: SlackFake) -> None:
    rig = Rig(slack)
    trigger = by_alice(ReleaseNodes)
    await rig.dispatcher.handle(trigger, refusal="operator alice may not command cluster test")
    await rig.dispatcher.notifier.join()
    [refused] = rig.of(ActionFailed)
    assert refused.payload.refused and refused.payload.operator == "alice"
    assert rig.adapter.calls == [] and "may not command" in slack.posts[0]["text"]


def streams_signed(trigger: Any) -> tuple[bytes, list[tuple[str, bytes]]]:
    return encode(trigger), signature_of(trigger)


def record(value: bytes, headers: list[tuple[str, bytes]]) -> Any:
    return SimpleNamespace(value=value, headers=headers, topic="t", partition=0, offset=0)


@pytest.fixture
def worker() -> ActionWorker:
    return ActionWorker(signing=SIGNING, operators=TRUSTED)


def test_the_worker_knows_who_signed_and_what_they_may_command(worker: ActionWorker) -> None:
    rule = quarantine(("n1",))
    assert worker._screen(record(encode(rule), signature_of(rule)), TRIGGER_KEY) == ([rule], None)
    mine = by_alice()
    assert worker._screen(record(*signed(mine)), TRIGGER_KEY) == ([mine], None)
    theirs = by_alice(cluster="other")  # alice may command `test` only
    _, refusal = worker._screen(record(*signed(theirs)), TRIGGER_KEY)
    assert refusal == "operator alice may not command cluster other"


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda: signed(by_alice(), MALLORY), "unknown operator 'mallory'"),
        (lambda: signed(by_alice(), BOB), "signed by operator bob, names operator {'alice'}"),
        (lambda: streams_signed(by_alice()), "signed by the streams app"),
        (lambda: (encode(by_alice()), []), "no valid trigger signature"),
    ],
)
def test_commands_nobody_can_vouch_for_are_dead_lettered(
    worker: ActionWorker, make: Any, why: str
) -> None:
    with pytest.raises(Rejected) as rejected:
        worker._screen(record(*make()), TRIGGER_KEY)
    assert rejected.value.reason == "unauthenticated" and why in rejected.value.detail


def test_a_forged_signature_is_not_alices(worker: ActionWorker) -> None:
    value, headers = signed(by_alice())
    other = encode(by_alice(nodes=("n2",)))  # alice's signature over another command
    with pytest.raises(Rejected, match="bad signature for operator 'alice'"):
        worker._screen(record(other, headers), TRIGGER_KEY)
    assert worker._screen(record(value, headers), TRIGGER_KEY)[1] is None
