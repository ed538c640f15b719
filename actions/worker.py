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
import contextlib
import time

import structlog
from aiokafka import AIOKafkaConsumer, TopicPartition
from pydantic import SecretStr

from actions.adapters.base import SchedulerAdapter, make_adapter
from actions.benchmark.baseline import BaselineSource, no_history
from actions.consuming import Handover, Record, consume, letter, running
from actions.dispatch import Dispatcher
from actions.fleet import FleetWatcher, ObservedFleet
from actions.inflight import Inflight
from actions.ledger import KafkaLedger
from actions.settings import ActionsSettings
from actions.silence_ends import SilenceEnds, owner
from actions.silences import KafkaSilences
from actions.slack.notifier import Notifier, make_notifier
from actions.slack.teller import IncidentTeller
from schemas.codec import DecodeError, decode
from schemas.events import Trigger
from schemas.operators import (
    Operator,
    OperatorSettings,
    Unauthenticated,
    authenticate,
    signed_by_operator,
)
from schemas.registry import build_decoders
from schemas.runtime import kafka_clients, tracing
from schemas.runtime.emitter import Emitter
from schemas.runtime.fleet import FleetReader
from schemas.runtime.metrics.catalog import EVENTS_IN, PROCESSING_SECONDS, labelled
from schemas.runtime.metrics.server import READINESS, watch_kafka
from schemas.runtime.settings import KafkaSettings
from schemas.signing import SigningSettings, verify
from schemas.topics import topic_name

log = structlog.get_logger("actions")
_NOTIFY_CLOSE_S = 1.0
_EMITTER_DRAIN_S = 1.0
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
        build_decoders()  # not on the way of the first triggers (schemas.registry)
        ledger = KafkaLedger(self.kafka, load_timeout_s=self.settings.ledger_load_timeout_s)
        emitter = Emitter(self.kafka)
        inflight = Inflight(self.settings.concurrency)
        consumer = self._consumer()
        silences = KafkaSilences(self.kafka, self.operators)
        ends = self._ends(silences, ledger, consumer)
        consumer.subscribe(
            [topic_name("triggers", self.kafka)],
            listener=Handover(consumer, inflight, self.settings.stop_grace_s, owned=ends),
        )
        fleet = FleetWatcher(
            self.kafka,
            ObservedFleet(self.settings.fleet_window_s),
            seed_timeout_s=self.settings.fleet_seed_timeout_s,
        )
        watch_kafka(self.kafka)
        READINESS.add("partitions_assigned", lambda: bool(consumer.assignment()))
        statuses = await self._read_views(silences)
        await ledger.start()
        await emitter.start()
        self.notifier.bind()
        teller_stop = asyncio.Event()
        teller = self._teller(ledger, emitter, teller_stop)
        telling_ends = None if ends is None else asyncio.create_task(ends.run(teller_stop))
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
                async with running(
                    consumer,
                    inflight,
                    group_id=self.settings.group_id,
                    grace_s=self.settings.stop_grace_s,
                ):
                    self._log_started(teller is not None)
                    await self._consume(consumer, inflight, ledger, emitter, dispatcher, key, stop)
            finally:
                teller_stop.set()
                if teller is not None:
                    await teller
                if telling_ends is not None:  # a tell under way gets the grace, as actions do
                    await _within(telling_ends, self.settings.stop_grace_s)
                await self._close(emitter, ledger, silences, statuses)

    def _consumer(self) -> AIOKafkaConsumer:
        """The triggers' reader; offsets are committed by hand, up to the last record finished
        with all before it (`actions.consuming`)."""
        return kafka_clients.consumer(
            self.kafka,
            group_id=self.settings.group_id,
            client_id=f"{self.kafka.client_id}-actions",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )

    async def _read_views(self, silences: KafkaSilences) -> FleetReader | None:
        """The silences, and the statuses where node groups have caps (their facts, as the
        streams app knows them: a cap counts the nodes of each group). Both are read again
        before each decision they guard, so a failure here is not fatal."""
        try:
            await silences.load()
        except Exception as exc:
            log.warning("silences_unread", error=f"{type(exc).__name__}: {exc}")
        statuses = FleetReader(self.kafka, "statuses") if self.settings.quarantine_groups else None
        if statuses is not None:
            try:
                await statuses.load()
            except Exception as exc:
                log.warning("statuses_unread", error=f"{type(exc).__name__}: {exc}")
        return statuses

    def _log_started(self, tells_incidents: bool) -> None:
        log.info(
            "actions_started",
            adapter=self.adapter.name,
            dry_run=self.settings.dry_run,
            operators=sorted(self.operators),
            tells_incidents=tells_incidents,
        )

    async def _close(
        self,
        emitter: Emitter,
        ledger: KafkaLedger,
        silences: KafkaSilences,
        statuses: FleetReader | None,
    ) -> None:
        """What the worker's outputs and views hold, let go in turn once no action is under way."""
        await self.notifier.close(_NOTIFY_CLOSE_S)
        await emitter.stop(drain_timeout_s=_EMITTER_DRAIN_S)
        await ledger.stop()
        await silences.stop()
        if statuses is not None:
            await statuses.stop()

    def _ends(
        self, silences: KafkaSilences, ledger: KafkaLedger, consumer: AIOKafkaConsumer
    ) -> SilenceEnds | None:
        """What tells each silence's end once; a worker in dry-run tells nothing."""
        if self.settings.dry_run:
            return None
        slack = self.notifier.settings
        return SilenceEnds(
            silences,
            ledger,
            self.notifier,
            owner(consumer, topic_name("triggers", self.kafka)),
            within_s=slack.tell_ended_within_s,
            poll_s=slack.silence_ends_poll_s,
        )

    def _teller(
        self, ledger: KafkaLedger, emitter: Emitter, stop: asyncio.Event
    ) -> asyncio.Task[None] | None:
        """The incident teller beside the triggers, with a Slack token (and unless turned off);
        a failure of it is logged, never the worker's: actions go on untold."""
        slack = self.notifier.settings
        if slack.token is None or not slack.tell_incidents:
            return None
        teller = IncidentTeller(
            self.kafka,
            slack,
            self.notifier,
            ledger,
            emitter.dead_letter,
            grace_s=self.settings.stop_grace_s,
        )

        async def tell() -> None:
            try:
                await teller.run(stop)
            except Exception:
                log.exception("teller_failed")

        return asyncio.create_task(tell(), name="incident teller")

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
        async def assigned() -> None:
            await ledger.load_retrying(stop)
            self.notifier.threads.update(ledger.threads())

        await consume(
            consumer,
            inflight,
            group_id=self.settings.group_id,
            start=lambda record: self._start(record, inflight, emitter, dispatcher, key),
            assigned=assigned,
            dead_letter=emitter.dead_letter,
            stop=stop,
        )

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
        await emitter.dead_letter(letter(record, self.settings.group_id, why.reason, why.detail))


async def _within(task: asyncio.Task[None], grace_s: float) -> None:
    """`task`'s end, waited for `grace_s` at most; then it is cancelled."""
    _, pending = await asyncio.wait({task}, timeout=grace_s)
    for late in pending:
        late.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await late
