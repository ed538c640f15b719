"""Running the action worker in a test's own process, and reading what it emitted."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiokafka import AIOKafkaConsumer

from actions.adapters.base import SchedulerAdapter
from actions.settings import ActionsSettings
from actions.worker import ActionWorker
from centrality.slack_fake import SlackFake
from schemas.codec import decode
from schemas.envelope import Event
from schemas.events import Trigger
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name
from tests.support.slack import notifier_for
from tests.support.triggers import SIGNING, signature_of


@asynccontextmanager
async def worker(
    kafka: KafkaSettings,
    adapter: SchedulerAdapter,
    slack: SlackFake,
    slack_settings: dict[str, Any] | None = None,
    **settings: Any,
) -> AsyncIterator[None]:
    """A worker as `centrality actions` runs it, in this process so the adapter can be read;
    it tells incidents to `slack` too (`slack_settings`: the notifier's and the teller's)."""
    notifier = notifier_for(slack, **(slack_settings or {}))
    stop = asyncio.Event()
    w = ActionWorker(
        kafka,
        ActionsSettings(**{"group_id": f"g-{uuid.uuid4().hex[:8]}", **settings}),
        adapter,
        notifier,
        SIGNING,
    )
    task = asyncio.create_task(w.run(stop))
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def send(kafka: KafkaSettings, *triggers: Trigger) -> None:
    """Signed, as the streams app sends them."""
    async with Emitter(kafka) as emitter:
        for t in triggers:
            await emitter.emit(t, signature_of(t))


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
