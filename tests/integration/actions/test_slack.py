"""The Slack notifier against a local Slack API stub: threads, rate limits, the secret token."""

from __future__ import annotations

import time
from typing import Any

import pytest
import structlog
from pydantic import SecretStr

from actions.errors import TemporaryError
from actions.slack.notifier import Message, SlackNotifier, make_notifier
from actions.slack.settings import SlackSettings
from centrality.slack_stub import SlackStub

TOKEN = "xoxb-very-secret-token"


def settings(stub: SlackStub, **kw: Any) -> SlackSettings:
    return SlackSettings(token=SecretStr(TOKEN), base_url=stub.base_url, channel="#gpu", **kw)


def test_one_thread_per_incident_also_after_a_restart(slack: SlackStub) -> None:
    notifier = SlackNotifier(settings(slack))
    first = notifier.post("job-42", Message("a"))
    notifier.post("node-7", Message("b"))
    third = notifier.post("job-42", Message("c"))
    # A new worker gets the threads back from the ledger and keeps writing into them.
    restarted = SlackNotifier(settings(slack), threads=notifier.threads)
    restarted.post("job-42", Message("d"))

    a, b, c, d = slack.posts
    assert "thread_ts" not in a and "thread_ts" not in b
    assert c["thread_ts"] == d["thread_ts"] == a["ts"] == first["thread_ts"] == third["thread_ts"]
    assert a["channel"] == "#gpu" and b["ts"] != a["ts"]


def test_rate_limit_is_waited_out(slack: SlackStub) -> None:
    slack.rate_limit_next, slack.retry_after_s = 1, 1
    start = time.monotonic()
    SlackNotifier(settings(slack)).post("job-42", Message("after a 429"))
    assert time.monotonic() - start >= 1.0  # Retry-After honoured
    assert slack.rejected == 1
    assert [p["text"] for p in slack.posts] == ["after a 429"]


def test_persistent_rate_limit_is_a_temporary_error(slack: SlackStub) -> None:
    slack.rate_limit_next, slack.retry_after_s = 3, 0
    with pytest.raises(TemporaryError, match="429"):
        SlackNotifier(settings(slack, max_retries=2)).post("job-42", Message("x"))
    assert slack.rejected == 3 and slack.posts == []


def test_token_is_sent_but_never_logged(slack: SlackStub) -> None:
    with structlog.testing.capture_logs() as logs:
        s = settings(slack)
        make_notifier(s).post("job-42", Message("hello"))
    assert slack.tokens == [f"Bearer {TOKEN}"]
    assert logs and TOKEN not in repr(logs)
    assert TOKEN not in repr(s) and TOKEN not in s.model_dump_json()
