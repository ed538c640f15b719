"""The notifier paces itself per channel against the Slack fake, on one test clock: order in a
thread, coalesced parents, a digest instead of a backlog, Retry-After honoured, failures."""

from __future__ import annotations

import asyncio
import itertools

from actions.slack.message import Message
from actions.slack.notifier import Delivery, Notifier
from centrality.slack_fake import Message as Posted
from centrality.slack_fake import SlackFake
from tests.support.slack import FastClock, notifier_for
from tests.support.until import until_true


def times(messages: list[Posted]) -> list[float]:
    return [m.versions[0].at for m in messages]


def spaced(at: list[float]) -> bool:
    return all(b - a >= 1.0 for a, b in itertools.pairwise(at))


async def settled(notifier: Notifier, *futures: asyncio.Future[Delivery]) -> list[Delivery]:
    done = await asyncio.wait_for(asyncio.gather(*futures), 30)
    await asyncio.wait_for(notifier.join(), 30)
    return list(done)


async def test_a_threads_replies_keep_their_order_at_slacks_pace(slack: SlackFake) -> None:
    notifier = notifier_for(slack)
    sent = [notifier.reply("inc-1", Message(f"step {i}")) for i in range(6)]
    sent += [notifier.reply("inc-2", Message("another incident"))]
    deliveries = await settled(notifier, *sent)

    assert [d.how for d in deliveries] == ["posted"] * 7
    channel = slack.channel("gpu-incidents")
    first, second = channel.top()
    assert [m.text for m in channel.thread(first.ts)] == [f"step {i}" for i in range(6)]
    assert second.text == "another incident" and second.replies == []
    assert spaced(times(list(channel.messages.values()))) and slack.refusals == []


async def test_a_parent_shown_again_before_its_turn_is_told_once_with_the_latest(
    slack: SlackFake,
) -> None:
    notifier = notifier_for(slack)
    busy = notifier.reply("inc-0", Message("the lane is busy with this one"))
    shown = [notifier.show("inc-1", Message(f"version {i}")) for i in range(4)]
    await settled(notifier, busy, *shown)
    moved = notifier.show("inc-1", Message("moved"))
    [delivery] = await settled(notifier, moved)

    parent = slack.channel("gpu-incidents").top()[1]
    assert [v.text for v in parent.versions] == ["version 3", "moved"]  # posted once, updated
    assert delivery.how == "updated" and delivery.thread == notifier.threads["inc-1"]
    assert [p["text"] for p in slack.posts] == ["the lane is busy with this one", "version 3"]


async def test_a_burst_beyond_the_backlog_becomes_one_digest(slack: SlackFake) -> None:
    notifier = notifier_for(slack, backlog_max=3)
    burst = [
        notifier.show(f"inc-{i}", Message(f"Drained n{i}", line="Drained {nodes}", nodes=(n,)))
        for i, n in enumerate(f"n{i}" for i in range(40))
    ]
    deliveries = await settled(notifier, *burst)

    top = slack.channel("gpu-incidents").top()
    assert [m.text for m in top[:3]] == ["Drained n0", "Drained n1", "Drained n2"]
    [digest] = top[3:]
    assert digest.text.startswith("37 messages at once, told together")
    assert "Drained n[3-39]" in str(digest.blocks)  # one line, the nodes folded
    assert [d.how for d in deliveries] == ["posted"] * 3 + ["digest"] * 37
    assert {d.thread.ts for d in deliveries[3:] if d.thread} == {digest.ts}
    assert spaced(times(top)) and slack.refusals == []
    # An incident told in the digest has no parent of its own: its replies go to the digest's
    # thread, and showing it again updates nothing.
    again = notifier.show("inc-7", Message("moved"))
    step = notifier.reply("inc-7", Message("resolved"))
    shown, replied = await settled(notifier, again, step)
    assert shown.how == "digest" and digest.edits == 0
    assert replied.how == "posted" and [m.text for m in slack.channel("gpu-incidents").thread(
        digest.ts)][1:] == ["resolved"]  # fmt: skip


async def test_retry_after_is_honoured_on_the_whole_channel(slack: SlackFake) -> None:
    clock = slack.clock
    assert isinstance(clock, FastClock)
    slack.channel("gpu-incidents").last_post_at = clock()  # another app posted just now
    notifier = notifier_for(slack)
    started = clock()
    deliveries = await settled(
        notifier, notifier.reply("inc-1", Message("a")), notifier.reply("inc-2", Message("b"))
    )

    assert [d.how for d in deliveries] == ["posted", "posted"]
    assert slack.refusals == [("chat.postMessage", "ratelimited")]  # once, then waited out
    a, b = slack.channel("gpu-incidents").top()
    assert a.versions[0].at >= started + 1.0 and b.versions[0].at >= a.versions[0].at + 1.0


async def test_slack_down_is_waited_out_and_a_refusal_is_not_retried(slack: SlackFake) -> None:
    notifier = notifier_for(slack, retry_initial_s=1, retry_max_s=5)
    slack.down = True
    waiting = notifier.reply("inc-1", Message("after the outage"))
    await until_true(lambda: len(slack.refusals) >= 3)
    slack.down = False
    bad = notifier.reply("inc-2", Message("x", blocks=[{"type": "no_such_block"}]))
    told, lost = await settled(notifier, waiting, bad)

    assert told.how == "posted" and [p["text"] for p in slack.posts] == ["after the outage"]
    assert lost.how == "lost" and "invalid_blocks" in str(lost.error)
    assert slack.refusals.count(("chat.postMessage", "invalid_blocks")) == 1


async def test_a_parent_deleted_in_slack_is_posted_anew(slack: SlackFake) -> None:
    notifier = notifier_for(slack)
    [first] = await settled(notifier, notifier.show("inc-1", Message("opened")))
    assert first.thread is not None
    del slack.channel("gpu-incidents").messages[first.thread.ts]
    [again] = await settled(notifier, notifier.show("inc-1", Message("moved")))
    assert again.how == "posted" and again.thread != first.thread
    assert [m.text for m in slack.channel("gpu-incidents").top()] == ["moved"]


async def test_handlers_post_from_their_own_threads(slack: SlackFake) -> None:
    notifier = notifier_for(slack)
    notifier.bind()
    said = await asyncio.to_thread(notifier.post, "inc-1", Message("from a handler"))
    await asyncio.sleep(0)  # the loop takes it in
    await asyncio.wait_for(notifier.join(), 30)
    assert said == {"queued": True, "incident": "inc-1"}
    assert [p["text"] for p in slack.posts] == ["from a handler"]


async def test_an_edit_of_a_parent_waits_its_turn_but_is_never_digested(slack: SlackFake) -> None:
    notifier = notifier_for(slack, backlog_max=2)
    await settled(notifier, notifier.show("inc-1", Message("opened")))
    burst = [notifier.reply(f"inc-{i}", Message(f"step {i}")) for i in range(2, 9)]
    moved = notifier.show("inc-1", Message("moved"))
    *_, edited = await settled(notifier, *burst, moved)

    assert edited.how == "updated"
    parent, *_, digest = slack.channel("gpu-incidents").top()
    assert [v.text for v in parent.versions] == ["opened", "moved"]
    assert "moved" not in str(digest.blocks) and digest.text.startswith("5 messages at once")
