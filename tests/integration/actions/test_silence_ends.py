"""When a silence ends, Slack (the fake) gets one message listing what it held, through the real
action worker and Kafka: once when an operator expires it under a running worker, and once when
it ran out while no worker ran and two workers of one group start together; never again after
their restarts (what was told is in the action ledger)."""

from __future__ import annotations

import asyncio
import json
import uuid
from contextlib import AbstractAsyncContextManager

import pytest

from actions.adapters.memory import InMemoryAdapter
from actions.ledger import read_ledger
from centrality.slack_fake import Message, SlackFake
from schemas.codec import encode
from schemas.events import ActionHeld, SilenceAdded, SilenceExpired
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from tests.support.action_worker import count, send, wait_for, worker
from tests.support.operators import ALICE, expired, silence, trusted_json
from tests.support.triggers import quarantine
from tests.support.until import until_true

pytestmark = pytest.mark.integration
LOOK_S = 0.2  # how often the workers look for ended silences


async def tell(kafka: KafkaSettings, *events: SilenceAdded | SilenceExpired) -> None:
    """Silences as `centrality silence` sends them: signed by alice."""
    async with Emitter(kafka) as emitter:
        for event in events:
            await emitter.emit(event, ALICE.headers(encode(event)))


async def test_a_silences_end_is_told_once_across_workers_and_restarts(
    kafka_settings: KafkaSettings, slack: SlackFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CENTRALITY_OPERATORS", trusted_json())
    channel = slack.channel("gpu-incidents")
    group = f"g-{uuid.uuid4().hex[:8]}"

    def run() -> AbstractAsyncContextManager[None]:
        slack_settings = {"silence_ends_poll_s": LOOK_S}
        return worker(kafka_settings, InMemoryAdapter(), slack, slack_settings, group_id=group)

    def ended(added: SilenceAdded) -> list[Message]:
        return [m for m in channel.top() if m.text.startswith(f"Silence {added.subject} ")]

    # 1. A silence holds a drain; an operator expires it under a running worker: one message.
    window = silence()
    await tell(kafka_settings, window)
    async with run():
        drain = quarantine(("n1", "n2"))
        await send(kafka_settings, drain)
        await wait_for(kafka_settings, lambda seen: count(seen, ActionHeld, drain) == 1)
        await tell(kafka_settings, expired(window, reason="driver upgraded"))
        await until_true(lambda: ended(window), 30)

    # 2. One runs out while no worker runs; two workers of the group start together.
    brief = silence(duration_s=1)
    await tell(kafka_settings, brief)
    async with run(), run():
        await until_true(lambda: ended(brief), 60)
        await asyncio.sleep(20 * LOOK_S)  # many looks by both: a second message would come

    # 3. Restarted, a worker tells neither again.
    async with run():
        await asyncio.sleep(20 * LOOK_S)

    [told] = ended(window)
    said = json.dumps(told.blocks)
    assert told.text.startswith(f"Silence {window.subject} on test ended; it held 1 decision")
    assert "*It held 1 decision:* quarantine nodes (1)" in said
    assert "*Nodes:* `n[1-2]` (2 nodes)" in said and "`repeat_failures` (1)" in said
    assert "*alice* ended it <!date^" in said and ": driver upgraded." in said
    [ran_out] = ended(brief)
    blocks = json.dumps(ran_out.blocks)
    assert "*It held nothing:*" in blocks and "It ran out" in blocks
    # Two workers post on their own paces: Slack may answer one 429, which is waited out.
    assert len(channel.top()) == 2
    assert all(why == "ratelimited" for _, why in slack.refusals), slack.refusals
    ledger = await read_ledger(kafka_settings)
    assert [ledger.end_told(s.subject) is not None for s in (window, brief)] == [True, True]
