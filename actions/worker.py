"""The action worker: triggers from Kafka through the dispatcher; results, ledger back to Kafka."""

from __future__ import annotations

import asyncio

import structlog
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from actions.adapters.base import SchedulerAdapter, make_adapter
from actions.dispatch import Dispatcher
from actions.fleet import FleetWatcher, ObservedFleet
from actions.ledger import KafkaLedger
from actions.settings import ActionsSettings
from actions.slack.notifier import Notifier, make_notifier
from schemas.codec import DecodeError, decode
from schemas.deadletter import DeadLetter
from schemas.emitter import Emitter
from schemas.events import Trigger
from schemas.settings import KafkaSettings
from schemas.topics import topic_name

log = structlog.get_logger("actions")


class ActionWorker:
    def __init__(
        self,
        kafka: KafkaSettings | None = None,
        settings: ActionsSettings | None = None,
        adapter: SchedulerAdapter | None = None,
        notifier: Notifier | None = None,
    ) -> None:
        self.kafka = kafka or KafkaSettings()
        self.settings = settings or ActionsSettings()
        self.adapter = adapter or make_adapter(self.settings.adapter)
        self.notifier = notifier or make_notifier()

    async def run(self, stop: asyncio.Event | None = None) -> None:
        stop = stop or asyncio.Event()
        ledger = KafkaLedger(self.kafka, load_timeout_s=self.settings.ledger_load_timeout_s)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.kafka.bootstrap,
            group_id=self.settings.group_id,
            client_id=f"{self.kafka.client_id}-actions",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        consumer.subscribe([topic_name("triggers", self.kafka)])
        fleet = FleetWatcher(
            self.kafka,
            ObservedFleet(self.settings.fleet_window_s),
            seed_timeout_s=self.settings.fleet_seed_timeout_s,
        )
        await ledger.start()
        try:
            async with Emitter(self.kafka) as emitter, fleet.running() as observed:
                dispatcher = Dispatcher(
                    self.settings,
                    self.adapter,
                    self.notifier,
                    ledger,
                    emitter.emit,
                    fleet=observed,
                )
                await consumer.start()
                log.info(
                    "actions_started", adapter=self.adapter.name, dry_run=self.settings.dry_run
                )
                known: set[TopicPartition] = set()
                try:
                    while not stop.is_set():
                        fetched = await consumer.getmany(timeout_ms=200)
                        # Partitions new here may hold triggers another worker acted on: read
                        # the ledger again before acting on any of them. (A rebalance listener
                        # would race with fetching, which aiokafka does meanwhile.)
                        assigned = set(consumer.assignment())
                        if assigned - known:
                            await ledger.load()
                            self.notifier.threads.update(ledger.threads())
                        known = assigned
                        for records in fetched.values():
                            for record in records:
                                await self._handle_record(emitter, dispatcher, record)
                        if fetched:
                            await consumer.commit()
                finally:
                    await consumer.stop()
        finally:
            await ledger.stop()

    async def _handle_record(
        self, emitter: Emitter, dispatcher: Dispatcher, record: ConsumerRecord[bytes, bytes]
    ) -> None:
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
            if isinstance(trigger, Trigger):
                await dispatcher.handle(trigger)
