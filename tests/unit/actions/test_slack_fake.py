"""The Slack fake answers as Slack does, to slack_sdk's own WebClient: channels by name and id,
threads, edits, every error code Centrality can meet, the limits, and the pace on a test clock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from centrality.slack_fake import SlackFake
from tests.support.slack import TOKEN, FastClock


@pytest.fixture
def fake() -> Iterator[SlackFake]:
    with SlackFake(clock=FastClock()) as fake:
        fake.add_channel("elsewhere", member=False)
        yield fake


@pytest.fixture
def client(fake: SlackFake) -> WebClient:
    return WebClient(token=TOKEN, base_url=fake.base_url, retry_handlers=[])


def later(fake: SlackFake, seconds: float = 1.0) -> None:
    assert isinstance(fake.clock, FastClock)
    fake.clock.advance(seconds)


def refused(call: Any, **args: Any) -> tuple[int, str, dict[str, Any]]:
    with pytest.raises(SlackApiError) as raised:
        call(**args)
    response = raised.value.response
    return response.status_code, str(response["error"]), dict(response.headers)


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def test_a_thread_its_replies_and_edits_are_kept(fake: SlackFake, client: WebClient) -> None:
    parent = client.chat_postMessage(channel="#gpu-incidents", text="opened", blocks=[section("a")])
    channel = fake.channel("gpu-incidents")
    assert parent["channel"] == channel.id  # a name in, the id out, as Slack answers
    later(fake)
    reply = client.chat_postMessage(channel=channel.id, text="step", thread_ts=parent["ts"])
    later(fake)
    client.chat_update(channel=channel.id, ts=parent["ts"], text="moved", blocks=[section("b")])

    [(where, thread)] = fake.threads()
    assert where is channel and [m.ts for m in thread] == [parent["ts"], reply["ts"]]
    assert [v.text for v in thread[0].versions] == ["opened", "moved"]
    assert thread[0].blocks == [section("b")] and thread[0].edits == 1
    assert thread[1].thread_ts == parent["ts"] and fake.refusals == []


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"channel": "#nowhere", "text": "x"}, "channel_not_found"),
        ({"channel": "#elsewhere", "text": "x"}, "not_in_channel"),
        ({"channel": "#gpu-incidents"}, "no_text"),
        ({"channel": "#gpu-incidents", "text": "x" * 40_001}, "msg_too_long"),
        ({"channel": "#gpu-incidents", "text": "x", "thread_ts": "1.2"}, "invalid_thread_ts"),
        ({"channel": "#gpu-incidents", "blocks": [{"type": "carousel_of_cats"}]}, "invalid_blocks"),
        ({"channel": "#gpu-incidents", "blocks": [{**section("x"), "colour": "red"}]},
         "invalid_blocks"),
        ({"channel": "#gpu-incidents", "blocks": [section("x" * 3001)]}, "invalid_blocks"),
        ({"channel": "#gpu-incidents", "blocks": [section("x")] * 51}, "invalid_blocks"),
        ({"channel": "#gpu-incidents",
          "blocks": [{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}]},
         "invalid_blocks"),
        ({"channel": "#gpu-incidents",
          "blocks": [{"type": "header", "text": {"type": "mrkdwn", "text": "*h*"}}]},
         "invalid_blocks"),
        ({"channel": "#gpu-incidents", "blocks": [section("x" * 2900)] * 5},
         "msg_blocks_too_long"),
    ],
)  # fmt: skip
def test_what_slack_refuses_is_refused_with_its_code(
    fake: SlackFake, client: WebClient, args: dict[str, Any], error: str
) -> None:
    if error != "no_text" and "text" not in args:
        args = {**args, "text": "what notifications show"}
    status, said, _ = refused(client.chat_postMessage, **args)
    assert (status, said) == (200, error)
    assert fake.refusals == [("chat.postMessage", error)] and fake.posts == []


def test_an_update_needs_a_message_and_is_checked_as_a_post(
    fake: SlackFake, client: WebClient
) -> None:
    posted = client.chat_postMessage(channel="#gpu-incidents", text="x")
    assert refused(client.chat_update, channel=posted["channel"], ts="9.9", text="y")[1] == (
        "message_not_found"
    )
    too_many = [section("x")] * 51
    assert refused(client.chat_update, channel=posted["channel"], ts=posted["ts"], text="y",
                   blocks=too_many)[1] == "invalid_blocks"  # fmt: skip
    assert fake.channel("gpu-incidents").messages[posted["ts"]].edits == 0


def test_one_message_a_second_per_channel_then_429_with_an_integer_retry_after(
    fake: SlackFake, client: WebClient
) -> None:
    client.chat_postMessage(channel="#gpu-incidents", text="first")
    later(fake, 0.3)
    status, error, headers = refused(client.chat_postMessage, channel="#gpu-incidents", text="2")
    assert (status, error) == (429, "ratelimited")
    assert headers["Retry-After"] == "1"  # whole seconds, rounded up from 0.7
    other = fake.add_channel("other")  # another channel has its own pace
    client.chat_postMessage(channel=other.id, text="elsewhere")
    later(fake, 0.7)
    client.chat_postMessage(channel="#gpu-incidents", text="second")
    assert [p["text"] for p in fake.posts] == ["first", "elsewhere", "second"]
    assert fake.refusals == [("chat.postMessage", "ratelimited")]


def test_updates_are_tier_3_fifty_a_minute(fake: SlackFake, client: WebClient) -> None:
    posted = client.chat_postMessage(channel="#gpu-incidents", text="x")
    for i in range(50):
        client.chat_update(channel=posted["channel"], ts=posted["ts"], text=f"v{i}")
        later(fake, 0.1)
    status, error, headers = refused(
        client.chat_update, channel=posted["channel"], ts=posted["ts"], text="one too many"
    )
    assert (status, error, headers["Retry-After"]) == (429, "ratelimited", "55")
    later(fake, 55)
    client.chat_update(channel=posted["channel"], ts=posted["ts"], text="a minute on")
    assert fake.channel("gpu-incidents").messages[posted["ts"]].edits == 51


def test_no_token_is_not_authed_and_an_outage_is_503(fake: SlackFake) -> None:
    status, error, _ = refused(
        WebClient(base_url=fake.base_url, retry_handlers=[]).chat_postMessage,
        channel="#gpu-incidents",
        text="x",
    )
    assert (status, error) == (200, "not_authed")
    fake.down = True
    client = WebClient(token=TOKEN, base_url=fake.base_url, retry_handlers=[])
    assert refused(client.chat_postMessage, channel="#gpu-incidents", text="x")[0] == 503
