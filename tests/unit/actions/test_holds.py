"""What a silence held, and the one message when it ends, without Kafka: the fold over the
ledger that `silence list` shows, which ended silences a worker must tell (its own, lately
ended, not told yet), and the telling itself, once, across workers sharing a ledger."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta
from types import SimpleNamespace

from actions.holds import held_by_silence
from actions.ledger import EndTold, Ledger, LedgerEntry, Outcome, _entries
from actions.silence_ends import Owns, SilenceEnds, ended_untold
from actions.silences import Silences
from centrality.slack_fake import SlackFake
from schemas.envelope import utcnow
from tests.support.operators import TRUSTED, expired, signed, silence
from tests.support.slack import notifier_for
from tests.support.triggers import quarantine, restart
from tests.unit.actions.test_dispatch import Rig
from tests.unit.actions.test_people import silences, with_silences


def held(
    silence_id: str | None,
    nodes: tuple[str, ...] = (),
    subject: str = "slurm/test/42",
    action: str = "quarantine_nodes",
    rule: str = "fatal_xid",
    outcome: Outcome = "held",
) -> LedgerEntry:
    return LedgerEntry(
        trigger_id=uuid.uuid4(),
        trigger_type="QuarantineNodes",
        action=action,
        cluster="test",
        subject=subject,
        rule=rule,
        nodes=nodes,
        outcome=outcome,
        incident="test/x",
        held_by=silence_id,
    )


def owning(answer: bool) -> Owns:
    return lambda _: answer


def test_what_each_silence_held_is_folded_by_action_rule_nodes_and_jobs() -> None:
    entries = [
        held("s-1", (f"gpu-{i:02d}",)) for i in range(1, 9)
    ] + [
        held("s-1", subject="slurm/test/7", action="restart_job", rule="restart_incomplete_exit"),
        held("s-2", ("gpu-99",)),
        held("s-1", ("gpu-50",), outcome="dry_run"),  # a shadow rule's: nothing was held
        held(None, ("gpu-51",), outcome="succeeded"),
    ]  # fmt: skip
    found = held_by_silence(entries)
    assert sorted(found) == ["s-1", "s-2"]
    doc = found["s-1"].document()
    assert doc["decisions"] == 9
    assert doc["actions"] == {"quarantine_nodes": 8, "restart_job": 1}
    assert doc["rules"] == {"fatal_xid": 8, "restart_incomplete_exit": 1}
    assert doc["nodes"] == "gpu-[01-08]" and doc["nodes_count"] == 8
    assert doc["jobs"] == ["slurm/test/7"]
    assert found["s-2"].document()["nodes"] == "gpu-99"


async def test_the_dispatcher_records_the_rule_of_a_held_decision(slack: SlackFake) -> None:
    added = silence()
    rig = with_silences(Rig(slack), silences(added))
    await rig.handle(quarantine(("n1", "n2")))
    await rig.handle(restart())
    doc = held_by_silence(rig.ledger.entries())[added.payload.silence_id].document()
    assert doc["rules"] == {"repeat_failures": 1, "restart_incomplete_exit": 1}
    assert doc["nodes"] == "n[1-2]" and doc["jobs"] == ["slurm/test/42"]


def test_which_ended_silences_a_worker_tells() -> None:
    now = utcnow()
    ran_out = silence(starts_at=now - timedelta(minutes=30), duration_s=600)
    expired_early = silence()
    long_ago = silence(starts_at=now - timedelta(days=1), duration_s=60)
    lasting = silence()
    told = silence(starts_at=now - timedelta(minutes=30), duration_s=600)
    not_mine = silence(starts_at=now - timedelta(minutes=30), duration_s=600)
    known = Silences(TRUSTED)
    for event in (ran_out, expired_early, long_ago, lasting, told, not_mine):
        known.take(*signed(event))
    known.take(*signed(expired(expired_early)))
    ids = {e.payload.silence_id for e in (ran_out, expired_early, long_ago, lasting, told)}
    due = ended_untold(
        known.all(),
        utcnow(),
        lambda s: EndTold(silence_id=s) if s == told.payload.silence_id else None,
        lambda s: s in ids,
        3600.0,
    )
    assert [s.silence_id for s in due] == [ran_out.payload.silence_id, expired_early.subject]
    assert due[0].ended_by is None and due[1].ended_by == "alice"


async def test_a_silences_end_is_told_once_listing_what_it_held(slack: SlackFake) -> None:
    added = silence()
    rig = with_silences(Rig(slack), silences(added))
    await rig.handle(quarantine(("gpu-01", "gpu-02")))
    await rig.handle(quarantine(("gpu-03",), window="w2"))
    rig.dispatcher.silences.take(*signed(expired(added)))
    ledger = rig.ledger
    # Two workers share the ledger (as the topic): only the owner tells, and once.
    workers = [
        SilenceEnds(rig.dispatcher.silences, ledger, notifier_for(slack), owning(owns),
                    within_s=3600, poll_s=1)
        for owns in (False, True)
    ]  # fmt: skip
    assert [await w.tell_ended() for w in workers] == [0, 1]
    assert [await w.tell_ended() for w in workers] == [0, 0]
    [post] = slack.posts
    said = json.dumps(post["blocks"])
    assert post["text"].startswith(f"Silence {added.subject} on test ended; it held 2 decisions")
    assert "*It held 2 decisions:* quarantine nodes (2)" in said
    assert "`gpu-[01-03]` (3 nodes)" in said and "`repeat_failures` (2)" in said
    assert "*alice* ended it <!date^" in said and "Rules decide afresh now" in said
    told = ledger.end_told(added.subject)
    assert told is not None and told.held == 2 and told.thread is not None
    # The record reads back from the topic's bytes as itself.
    again = Ledger()
    again._apply(_entries([SimpleNamespace(value=told.to_bytes(), offset=0)]))
    assert again.end_told(added.subject) == told and told.key == f"ended/{added.subject}"


async def test_a_silence_that_held_nothing_is_told_too_and_one_slack_lost_is_tried_again(
    slack: SlackFake,
) -> None:
    added = silence(starts_at=utcnow() - timedelta(seconds=5), duration_s=1)
    known = silences(added)
    ledger = Ledger()
    slack.down = True
    ends = SilenceEnds(
        known, ledger, notifier_for(slack, give_up_after_s=1), owning(True),
        within_s=3600, poll_s=1,
    )  # fmt: skip
    assert await asyncio.wait_for(ends.tell_ended(), 30) == 0
    assert ledger.end_told(added.subject) is None
    slack.down = False
    assert await ends.tell_ended() == 1
    [post] = slack.posts
    assert "*It held nothing:*" in json.dumps(post["blocks"]) and "It ran out" in json.dumps(
        post["blocks"]
    )


async def test_no_end_is_told_while_the_partitions_are_handed_over(slack: SlackFake) -> None:
    added = silence(starts_at=utcnow() - timedelta(seconds=5), duration_s=1)
    ends = SilenceEnds(
        silences(added), Ledger(), notifier_for(slack), owning(True), within_s=3600, poll_s=1
    )
    await ends.revoking(1.0)
    assert await ends.tell_ended() == 0 and slack.posts == []
    ends.assigned()
    assert await ends.tell_ended() == 1 and len(slack.posts) == 1
