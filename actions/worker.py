"""The action worker: triggers from Kafka through the dispatcher; results, ledger back to Kafka.

No trigger stops it. Before anything is acted on, a record must be small enough for its results
to fit a message, carry a valid signature and decode to triggers; otherwise it is dead-lettered
with its reason (`too_large`, `unauthenticated`, the codec's reason, `not-a-trigger`). A valid
signature is the streams app's (`schemas.signing`: a rule's decision) or a trusted operator's
(`schemas.operators`: a command naming that operator); an operator's command on a cluster they
may not command is refused through the dispatcher, so it is recorded and told like any refusal.
A batch the client cannot read is skipped and dead-lettered. What fails while acting belongs to
its trigger (`action-error`), never to the worker.

Triggers are handled side by side (`concurrency`), each subject's in order; offsets are
committed up to the last record finished with all before it. On stop, actions under way get
`stop_grace_s`, then are abandoned uncommitted (the ledger's `started` tells the next worker).
"""

from __future__ import annotations

import asyncio
import time
from typing import TypeAlias

import structlog
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError
from pydantic import SecretStr

from actions.adapters.base import SchedulerAdapter, make_adapter
from actions.benchmark.baseline import BaselineSource, no_history
from actions.bounds import MAX_KEY_BYTES, MAX_RAW_BYTES
from actions.dispatch import Dispatcher
from actions.fleet import FleetWatcher, ObservedFleet
from actions.inflight import Inflight
from actions.ledger import KafkaLedger
from actions.settings import ActionsSettings
from actions.silences import KafkaSilences
from actions.slack.notifier import Notifier, make_notifier
from schemas import kafka_clients, tracing
from schemas.batches import SkippingFetcher
from schemas.codec import DecodeError, decode
from schemas.deadletter import DeadLetter
from schemas.emitter import Emitter
from schemas.events import Trigger
from schemas.fleet import FleetReader
from schemas.metrics.catalog import EVENTS_IN, PROCESSING_SECONDS, labelled
from schemas.metrics.kafka import sampling_lag
from schemas.metrics.server import READINESS, watch_kafka
from schemas.operators import (
    Operator,
    OperatorSettings,
    Unauthenticated,
    authenticate,
    signed_by_operator,
)
from schemas.outages import OUTAGES
from schemas.settings import KafkaSettings
from schemas.signing import SigningSettings, verify
from schemas.topics import topic_name

log = structlog.get_logger("actions")
Record: TypeAlias = ConsumerRecord[bytes, bytes]
_ROOM_POLL_S = 0.2
_NOTIFY_CLOSE_S = 1.0
_EMITTER_DRAIN_S = 1.0
_COMMIT_TIMEOUT_S = 2.0
_TRIGGER_SECONDS = PROCESSING_SECONDS.labels("actions_trigger")


class Rejected(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class ActionWorker:
    def __init__(
        self,
        kafka: KafkaSettings | None = None,
        settings: ActionsSettings | None = None,
        adapter: SchedulerAdapter | None = None,
        notifier: Notifier | None = None,
        signing: SigningSettings | None = None,
        operators: dict[str, Operator] | None = None,
        baselines: BaselineSource = no_history,
    ) -> None:
        self.kafka = kafka or KafkaSettings()
        self.settings = settings or ActionsSettings()
        self.signing = signing or SigningSettings()
        self.operators = OperatorSettings().trusted() if operators is None else operators
        self.adapter = adapter or make_adapter(self.settings.adapter)
        self.notifier = notifier or make_notifier()
        self.baselines = baselines

    async def run(self, stop: asyncio.Event | None = None) -> None:
        stop = stop or asyncio.Event()
        key = self.signing.require("the action worker")  # before anything is read
        ledger = KafkaLedger(self.kafka, load_timeout_s=self.settings.ledger_load_timeout_s)
        emitter = Emitter(self.kafka)
        inflight = Inflight(self.settings.concurrency)
        consumer = kafka_clients.consumer(
            self.kafka,
            group_id=self.settings.group_id,
            client_id=f"{self.kafka.client_id}-actions",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        consumer.subscribe(
            [topic_name("triggers", self.kafka)],
            listener=_Handover(consumer, inflight, self.settings.stop_grace_s),
        )
        fleet = FleetWatcher(
            self.kafka,
            ObservedFleet(self.settings.fleet_window_s),
            seed_timeout_s=self.settings.fleet_seed_timeout_s,
        )
        watch_kafka(self.kafka)
        READINESS.add("partitions_assigned", lambda: bool(consumer.assignment()))
        silences = KafkaSilences(self.kafka, self.operators)
        try:  # read again before each decision anyway: a failure here is not fatal
            await silences.load()
        except Exception as exc:
            log.warning("silences_unread", error=f"{type(exc).__name__}: {exc}")
        # Node groups' caps count the nodes of each group: their facts, as the streams app knows.
        statuses = FleetReader(self.kafka, "statuses") if self.settings.quarantine_groups else None
        if statuses is not None:
            try:  # read again before each guarded action anyway
                await statuses.load()
            except Exception as exc:
                log.warning("statuses_unread", error=f"{type(exc).__name__}: {exc}")
        await ledger.start()
        await emitter.start()
        started = False
        async with fleet.running() as observed:
            dispatcher = Dispatcher(
                self.settings,
                self.adapter,
                self.notifier,
                ledger,
                emitter.emit,
                fleet=observed,
                silences=silences,
                baselines=self.baselines,
                statuses=statuses,
                park=inflight.parked,
            )
            try:
                await consumer.start()
                started = True
                log.info(
                    "actions_started",
                    adapter=self.adapter.name,
                    dry_run=self.settings.dry_run,
                    operators=sorted(self.operators),
                )
                async with sampling_lag(consumer, self.settings.group_id):
                    await self._consume(consumer, inflight, ledger, emitter, dispatcher, key, stop)
            finally:
                await inflight.settle(self.settings.stop_grace_s)
                if started:
                    await _commit(consumer, inflight.committable())
                await inflight.abandon()
                await dispatcher.notifications.close(_NOTIFY_CLOSE_S)
                await kafka_clients.stop(consumer)
                await emitter.stop(drain_timeout_s=_EMITTER_DRAIN_S)
                await ledger.stop()
                await silences.stop()
                if statuses is not None:
                    await statuses.stop()

    async def _consume(
        self,
        consumer: AIOKafkaConsumer,
        inflight: Inflight,
        ledger: KafkaLedger,
        emitter: Emitter,
        dispatcher: Dispatcher,
        key: SecretStr,
        stop: asyncio.Event,
    ) -> None:
        fetcher = SkippingFetcher(consumer)
        known: set[TopicPartition] = set()
        while not stop.is_set():
            await inflight.wait_for_room(_ROOM_POLL_S)
            if not inflight.room:
                await _commit(consumer, inflight.committable())
                continue
            fetched, skipped, passed = await fetcher.getmany(
                timeout_ms=200, max_records=inflight.room
            )
            # Partitions new here may hold triggers another worker acted on: read the ledger
            # again before acting on any of them. (A rebalance listener would race with
            # fetching, which aiokafka does meanwhile.)
            assigned = set(consumer.assignment())
            if assigned - known:
                await ledger.load_retrying(stop)
                self.notifier.threads.update(ledger.threads())
            known = assigned
            for records in fetched.values():
                for record in records:
                    self._start(record, inflight, emitter, dispatcher, key)
            for batch in skipped:  # after the records before it: offsets queue up in order
                letter = batch.dead_letter(self.settings.group_id)
                inflight.start(batch.tp, batch.next_offset - 1, None, emitter.dead_letter(letter))
            for tp, after in passed.items():  # only markers since: committed past them in turn
                inflight.start(tp, after - 1, None, _nothing())
            await _commit(consumer, inflight.committable())

    def _start(
        self,
        record: Record,
        inflight: Inflight,
        emitter: Emitter,
        dispatcher: Dispatcher,
        key: SecretStr,
    ) -> None:
        tp = TopicPartition(record.topic, record.partition)
        try:
            triggers, refusal = self._screen(record, key)
        except Rejected as why:
            inflight.start(tp, record.offset, None, self._dead_letter(emitter, record, why))
            return
        for trigger in triggers:
            labelled(EVENTS_IN, record.topic, trigger.type).inc()
        first = triggers[0]
        subject = f"{first.cluster}/{first.subject}"
        acting = self._act(emitter, dispatcher, record, triggers, refusal)
        inflight.start(tp, record.offset, subject, acting)

    def _screen(self, record: Record, key: SecretStr) -> tuple[list[Trigger], str | None]:
        """The triggers of a record, and why their author may not have them carried out (an
        operator's command on a cluster they may not command); or why the record must not be
        acted on at all."""
        value = record.value or b""
        if len(value) > self.settings.max_trigger_bytes:
            raise Rejected(
                "too_large", f"{len(value)} bytes > {self.settings.max_trigger_bytes} bytes"
            )
        operator = self._signer(value, record, key)
        try:
            events = decode(value)
        except DecodeError as exc:
            raise Rejected(exc.reason, exc.detail) from None
        triggers = [e for e in events if isinstance(e, Trigger)]
        if not triggers or len(triggers) != len(events):
            others = sorted({e.type for e in events if not isinstance(e, Trigger)})
            raise Rejected("not-a-trigger", f"events that are not triggers: {others}")
        named = {t.payload.operator for t in triggers}
        if named != {operator[0] if operator else None}:
            signer = f"operator {operator[0]}" if operator else "the streams app"
            raise Rejected("unauthenticated", f"signed by {signer}, names operator {named}")
        if operator is not None:
            name, trusted = operator
            if barred := sorted({t.cluster for t in triggers if not trusted.may_touch(t.cluster)}):
                return triggers, f"operator {name} may not command cluster {barred[0]}"
        return triggers, None

    def _signer(self, value: bytes, record: Record, key: SecretStr) -> tuple[str, Operator] | None:
        """None for the streams app's signature, the operator for a trusted operator's."""
        if verify(value, record.headers, key):
            return None
        if not signed_by_operator(record.headers):
            raise Rejected("unauthenticated", "no valid trigger signature")
        try:
            return authenticate(value, record.headers, self.operators)
        except Unauthenticated as exc:
            raise Rejected("unauthenticated", str(exc)) from None

    async def _act(
        self,
        emitter: Emitter,
        dispatcher: Dispatcher,
        record: Record,
        triggers: list[Trigger],
        refusal: str | None,
    ) -> None:
        # The trace the streams app sent with the trigger goes on here.
        with tracing.span(
            f"process {record.topic}",
            lambda: {
                "messaging.destination.name": record.topic,
                "messaging.destination.partition.id": str(record.partition),
                "messaging.kafka.offset": record.offset,
            },
            kind=tracing.CONSUMER,
            headers=record.headers,
        ):
            await self._act_on(emitter, dispatcher, record, triggers, refusal)

    async def _act_on(
        self,
        emitter: Emitter,
        dispatcher: Dispatcher,
        record: Record,
        triggers: list[Trigger],
        refusal: str | None,
    ) -> None:
        for trigger in triggers:
            started = time.perf_counter()
            try:
                await dispatcher.handle(trigger, refusal=refusal)
            except Exception as exc:  # this trigger's failure, deterministic: never retried
                log.exception("action_error", id=str(trigger.event_id), type=trigger.type)
                why = Rejected("action-error", f"{type(exc).__name__}: {exc}"[:1000])
                await self._dead_letter(emitter, record, why)
            finally:
                _TRIGGER_SECONDS.observe(time.perf_counter() - started)

    async def _dead_letter(self, emitter: Emitter, record: Record, why: Rejected) -> None:
        raw, key = record.value or b"", record.key
        detail = why.detail[:1000]
        if len(raw) > MAX_RAW_BYTES:
            detail += f" (raw: the first {MAX_RAW_BYTES} of {len(raw)} bytes)"
        await emitter.dead_letter(
            DeadLetter(
                reason=why.reason,
                detail=detail,
                consumer=self.settings.group_id,
                topic=record.topic,
                partition=record.partition,
                offset=record.offset,
                key=None if key is None else key[:MAX_KEY_BYTES],
                raw=raw[:MAX_RAW_BYTES],
            )
        )


class _Handover(ConsumerRebalanceListener):  # type: ignore[misc]
    """Before partitions go to another worker: let their actions finish (a while), commit them,
    abandon the rest."""

    def __init__(self, consumer: AIOKafkaConsumer, inflight: Inflight, grace_s: float) -> None:
        self.consumer = consumer
        self.inflight = inflight
        self.grace_s = grace_s

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        await self.inflight.settle(self.grace_s, revoked)
        await _commit(self.consumer, self.inflight.committable(revoked))
        await self.inflight.abandon(revoked)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        pass


async def _nothing() -> None:
    pass


async def _commit(consumer: AIOKafkaConsumer, offsets: dict[TopicPartition, int]) -> None:
    """A commit that fails (a rebalance, the broker away) is not fatal: those triggers are
    delivered again, and the ledger makes a second delivery do nothing."""
    if not offsets:
        return
    try:
        await asyncio.wait_for(consumer.commit(offsets), _COMMIT_TIMEOUT_S)
    except (KafkaError, TimeoutError) as exc:
        if not OUTAGES.explains("kafka"):  # tried again at every fetch: the outage says it
            log.warning("commit_failed", error=repr(exc), partitions=len(offsets))
