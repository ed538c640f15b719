"""The action worker on the real broker: once per trigger across restarts, failures notified."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from pydantic import SecretStr

from actions.adapters.memory import InMemoryAdapter
from actions.errors import TemporaryError
from actions.settings import ActionsSettings
from actions.slack.notifier import SlackNotifier
from actions.slack.settings import SlackSettings
from actions.worker import ActionWorker
from schemas.codec import decode
from schemas.emitter import Emitter
from schemas.envelope import Event
from schemas.events import ActionFailed, ActionStarted, ActionSucceeded, Trigger
from schemas.settings import KafkaSettings
from schemas.topics import topic_name
from tests.support.slack_stub import SlackStub
from tests.support.triggers import notify, restart

pytestmark = pytest.mark.integration


@pytest.fixture
def slack() -> Iterator[SlackStub]:
    with SlackStub() as stub:
        yield stub


@asynccontextmanager
async def worker(
    kafka: KafkaSettings, adapter: InMemoryAdapter, slack: SlackStub, **settings: Any
) -> AsyncIterator[None]:
    """A worker as `centrality actions` runs it, in this process so the adapter can be read."""
    notifier = SlackNotifier(SlackSettings(token=SecretStr("xoxb-t"), base_url=slack.base_url))
    stop = asyncio.Event()
    w = ActionWorker(
        kafka, ActionsSettings(group_id=f"g-{uuid.uuid4().hex[:8]}", **settings), adapter, notifier
    )
    task = asyncio.create_task(w.run(stop))
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def send(kafka: KafkaSettings, *triggers: Trigger) -> None:
    async with Emitter(kafka) as emitter:
        for t in triggers:
            await emitter.emit(t)


async def wait_for(
    kafka: KafkaSettings, done: Callable[[list[Event]], bool], timeout_s: float = 60
) -> list[Event]:
    """Every action result so far, once `done` says enough arrived."""
    consumer = AIOKafkaConsumer(
        topic_name("actions", kafka), bootstrap_servers=kafka.bootstrap,
        auto_offset_reset="earliest", enable_auto_commit=False,
    )  # fmt: skip
    seen: list[Event] = []
    await consumer.start()
    try:
        async with asyncio.timeout(timeout_s):
            while not done(seen):
                for records in (await consumer.getmany(timeout_ms=300)).values():
                    seen += [e for r in records for e in decode(r.value or b"")]
    finally:
        await consumer.stop()
    return seen


def count(events: list[Event], cls: type[Event], trigger: Trigger) -> int:
    return sum(isinstance(e, cls) and e.payload.trigger_id == trigger.event_id for e in events)


async def test_same_trigger_twice_across_a_restart_acts_once(
    kafka_settings: KafkaSettings, slack: SlackStub
) -> None:
    adapter = InMemoryAdapter()
    first, again = restart(), restart()
    page1, page2 = notify("job-42", "n1"), notify("job-42", "n2")
    async with worker(kafka_settings, adapter, slack):
        await send(kafka_settings, first, page1)
        await wait_for(kafka_settings, lambda s: count(s, ActionSucceeded, page1) == 1)
    assert adapter.requeued == [("slurm/test/42", "s3://ckpt/step-1200")]

    # A fresh worker in a fresh consumer group re-reads every delivery, the old one included.
    sentinel = restart(window="attempt-2")
    async with worker(kafka_settings, adapter, slack):
        await send(kafka_settings, again, page2, sentinel)
        seen = await wait_for(kafka_settings, lambda s: count(s, ActionSucceeded, sentinel) == 1)

    assert first.event_id == again.event_id
    assert len(adapter.requeued) == 2  # the first trigger once, the sentinel once
    assert count(seen, ActionStarted, first) == count(seen, ActionSucceeded, first) == 1
    assert count(seen, ActionSucceeded, page1) == count(seen, ActionSucceeded, page2) == 1
    # Both pages of the incident landed in one Slack thread, though a restart lay between them.
    root, reply = slack.posts
    assert "thread_ts" not in root and reply["thread_ts"] == root["ts"]


async def test_failing_adapter_ends_in_action_failed_and_a_notification(
    kafka_settings: KafkaSettings, slack: SlackStub
) -> None:
    adapter = InMemoryAdapter()
    adapter.fail("requeue", *(TemporaryError("slurmctld not responding") for _ in range(4)))
    trigger = restart()
    async with worker(kafka_settings, adapter, slack, backoff_scale=0.01):
        await send(kafka_settings, trigger)
        seen = await wait_for(kafka_settings, lambda s: count(s, ActionFailed, trigger) == 1)
    [failed] = [e for e in seen if isinstance(e, ActionFailed)]
    assert failed.payload.attempt == 4 and not failed.payload.permanent
    assert count(seen, ActionStarted, trigger) == 4
    assert adapter.calls == ["requeue"] * 4 and adapter.requeued == []
    [post] = slack.posts
    assert "restart_job failed" in post["text"]
