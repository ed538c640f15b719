"""The action worker: triggers in, handler calls, ActionStarted/Succeeded/Failed out."""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from aiokafka import AIOKafkaConsumer, ConsumerRecord

import actions.handlers  # noqa: F401  (registers the built-in handlers)
from actions.adapters.base import SchedulerAdapter, make_adapter
from actions.errors import PermanentError, TemporaryError
from actions.registry import HandlerSpec, handler_for
from actions.settings import ActionsSettings
from schemas.codec import DecodeError, decode
from schemas.deadletter import DeadLetter
from schemas.emitter import Emitter
from schemas.envelope import utcnow
from schemas.events import ActionFailed, ActionStarted, ActionSucceeded, Trigger
from schemas.settings import KafkaSettings
from schemas.topics import topic_name

log = structlog.get_logger("actions")


class ActionWorker:
    def __init__(
        self,
        kafka: KafkaSettings | None = None,
        settings: ActionsSettings | None = None,
        adapter: SchedulerAdapter | None = None,
    ) -> None:
        self.kafka = kafka or KafkaSettings()
        self.settings = settings or ActionsSettings()
        self.adapter = adapter or make_adapter(self.settings.adapter)

    async def run(self, stop: asyncio.Event | None = None) -> None:
        stop = stop or asyncio.Event()
        consumer = AIOKafkaConsumer(
            topic_name("triggers", self.kafka),
            bootstrap_servers=self.kafka.bootstrap,
            group_id=self.settings.group_id,
            client_id=f"{self.kafka.client_id}-actions",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        async with Emitter(self.kafka) as emitter:
            await consumer.start()
            log.info("actions_started", adapter=self.adapter.name)
            try:
                while not stop.is_set():
                    fetched = await consumer.getmany(timeout_ms=200)
                    for records in fetched.values():
                        for record in records:
                            await self._handle_record(emitter, record)
                    if fetched:
                        await consumer.commit()
            finally:
                await consumer.stop()

    async def _handle_record(self, emitter: Emitter, record: ConsumerRecord[bytes, bytes]) -> None:
        try:
            events = decode(record.value or b"")
        except DecodeError as exc:
            await emitter.dead_letter(
                DeadLetter(
                    reason=exc.reason,
                    detail=exc.detail,
                    consumer=self.settings.group_id,
                    topic=record.topic,
                    partition=record.partition,
                    offset=record.offset,
                    key=record.key,
                    raw=record.value or b"",
                )
            )
            return
        for trigger in events:
            if not isinstance(trigger, Trigger):
                continue
            spec = handler_for(trigger)
            if spec is None:
                log.info("no_handler", type=trigger.type, id=str(trigger.event_id))
                continue
            await self.act(emitter, spec, trigger)

    async def act(self, emitter: Emitter, spec: HandlerSpec, trigger: Trigger) -> None:
        base: dict[str, Any] = {
            "trigger_id": trigger.event_id,
            "trigger_type": trigger.type,
            "action": spec.name,
        }
        attempt = 1
        while True:
            await emitter.emit(self._result(ActionStarted, trigger, {**base, "attempt": attempt}))
            try:
                detail = await asyncio.to_thread(spec.fn, trigger, self.adapter)
            except TemporaryError as exc:
                if attempt <= spec.retries:
                    log.warning("action_retry", action=spec.name, attempt=attempt, error=str(exc))
                    await asyncio.sleep(spec.backoff_s * 2 ** (attempt - 1))
                    attempt += 1
                    continue
                await self._failed(emitter, trigger, base, attempt, exc, permanent=False)
            except PermanentError as exc:
                await self._failed(emitter, trigger, base, attempt, exc, permanent=True)
            except Exception as exc:  # an unclassified bug in a handler: do not retry blindly
                await self._failed(emitter, trigger, base, attempt, exc, permanent=True)
            else:
                log.info("action_succeeded", action=spec.name, subject=trigger.subject)
                await emitter.emit(
                    self._result(
                        ActionSucceeded, trigger, {**base, "attempt": attempt, "detail": detail}
                    )
                )
            return

    async def _failed(
        self,
        emitter: Emitter,
        trigger: Trigger,
        base: dict[str, Any],
        attempt: int,
        exc: Exception,
        *,
        permanent: bool,
    ) -> None:
        log.error("action_failed", action=base["action"], error=str(exc), permanent=permanent)
        await emitter.emit(
            self._result(
                ActionFailed,
                trigger,
                {
                    **base,
                    "attempt": attempt,
                    "error": f"{type(exc).__name__}: {exc}",
                    "permanent": permanent,
                },
            )
        )

    def _result(self, cls: type[Any], trigger: Trigger, payload: dict[str, Any]) -> Any:
        return cls(
            source=self.settings.source,
            cluster=trigger.cluster,
            subject=trigger.subject,
            occurred_at=utcnow(),
            payload=payload,
        )
