"""The notifier against the Slack fake over its real HTTP, on the real clock: threads survive a
restart, and the token is sent but never logged."""

from __future__ import annotations

import asyncio

import structlog

from actions.slack.message import Message
from actions.slack.notifier import make_notifier
from centrality.slack_fake import SlackFake
from tests.support.slack import TOKEN, notifier_for, slack_settings


async def test_one_thread_per_incident_also_after_a_restart(slack: SlackFake) -> None:
    notifier = notifier_for(slack)
    for incident, text in (("job-42", "a"), ("node-7", "b"), ("job-42", "c")):
        notifier.submit(incident, Message(text))
    await asyncio.wait_for(notifier.join(), 30)
    # A new worker gets the threads back from the ledger and keeps writing into them.
    restarted = notifier_for(slack)
    restarted.threads.update(notifier.threads)
    restarted.submit("job-42", Message("d"))
    await asyncio.wait_for(restarted.join(), 30)

    a, b, c, d = slack.posts
    assert "thread_ts" not in a and "thread_ts" not in b
    assert c["thread_ts"] == d["thread_ts"] == a["ts"] and b["ts"] != a["ts"]
    assert [m.text for m in slack.channel("gpu-incidents").thread(a["ts"])] == ["a", "c", "d"]
    # The restarted one does not know when the first last posted: Slack may say to wait.
    assert set(slack.refusals) <= {("chat.postMessage", "ratelimited")}


async def test_token_is_sent_but_never_logged(slack: SlackFake) -> None:
    s = slack_settings(slack)
    with structlog.testing.capture_logs() as logs:
        notifier = make_notifier(s)
        notifier.submit("job-42", Message("hello"))
        await asyncio.wait_for(notifier.join(), 30)
    assert slack.tokens == [f"Bearer {TOKEN}"] and [p["text"] for p in slack.posts] == ["hello"]
    assert TOKEN not in repr(logs)
    assert TOKEN not in repr(s) and TOKEN not in s.model_dump_json()
