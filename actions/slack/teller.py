"""The incident teller: the `incidents` topic told to Slack, one thread per incident.

A consumer in its own group (`teller_group_id`), so each incident, keyed by its id, is told by
one worker. Its parent message is posted when the incident opens and updated in place as it
moves; replies go out only for the steps people must see (`actions.slack.telling`).

What was told of each incident (its thread, its parent's fingerprint, the steps replied) is
recorded in the action ledger (`Told`, keyed `told/<incident>`) before the record's offset is
committed, and read back whenever partitions come to this worker: a restart or a rebalance
posts no second parent and loses no update. A record is finished once told (or given up by
the notifier), or once a later record of the same incident is read: the latest wins.

An incident read for the first time already resolved is told only if it resolved within
`tell_resolved_within_s`: a new teller reading the topic's past stays quiet about old ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from datetime import datetime, timedelta
from typing import Any

import structlog
from aiokafka import TopicPartition

from actions.consuming import Handover, Record, consume, letter, nothing, running
from actions.inflight import Inflight
from actions.ledger import KafkaLedger, Told, retrying_transient
from actions.slack.notifier import Delivery, Notifier
from actions.slack.settings import SlackSettings
from actions.slack.telling import Telling, telling, told_after
from schemas.codec import DecodeError, decode
from schemas.deadletter import DeadLetter
from schemas.envelope import utcnow
from schemas.events.incidents import INCIDENT_TYPES, IncidentEvent
from schemas.runtime import kafka_clients
from schemas.runtime.metrics.catalog import EVENTS_IN, INCIDENTS_TOLD, labelled
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name

log = structlog.get_logger("actions.slack")


class IncidentTeller:
    def __init__(
        self,
        kafka: KafkaSettings,
        settings: SlackSettings,
        notifier: Notifier,
        ledger: KafkaLedger,
        dead_letter: Callable[[DeadLetter], Coroutine[Any, Any, None]],
        *,
        grace_s: float,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.kafka = kafka
        self.settings = settings
        self.notifier = notifier
        self.ledger = ledger
        self.dead_letter = dead_letter
        self.grace_s = grace_s
        self.clock = clock
        self._latest: dict[str, tuple[TopicPartition, int]] = {}  # incident: its newest record

    async def run(self, stop: asyncio.Event) -> None:
        group = self.settings.teller_group_id
        inflight = Inflight(self.settings.teller_concurrency)
        consumer = kafka_clients.consumer(
            self.kafka,
            group_id=group,
            client_id=f"{self.kafka.client_id}-teller",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        consumer.subscribe(
            [topic_name("incidents", self.kafka)],
            listener=Handover(consumer, inflight, self.grace_s),
        )

        async def assigned() -> None:  # what another worker told of them
            async for attempt in retrying_transient("ledger_load", stop):
                with attempt:
                    await self.ledger.refresh()

        async with running(consumer, inflight, group_id=group, grace_s=self.grace_s):
            log.info("teller_started", group=group, channel=self.settings.channel)
            await consume(
                consumer,
                inflight,
                group_id=group,
                start=lambda record: self._start(record, inflight),
                assigned=assigned,
                dead_letter=self.dead_letter,
                stop=stop,
            )

    def _start(self, record: Record, inflight: Inflight) -> None:
        tp = TopicPartition(record.topic, record.partition)
        try:
            events = decode(record.value, INCIDENT_TYPES)
        except DecodeError as exc:
            if exc.reason == "empty":  # a tombstone: compaction forgetting an incident
                inflight.start(tp, record.offset, None, nothing())
            else:
                self._reject(inflight, record, exc.reason, exc.detail)
            return
        event = events[0]
        if len(events) != 1 or not isinstance(event, IncidentEvent):
            types = sorted({e.type for e in events})
            self._reject(inflight, record, "not-an-incident", f"events {types}")
            return
        labelled(EVENTS_IN, record.topic, event.type).inc()
        self._latest[event.subject] = (tp, record.offset)
        inflight.start(tp, record.offset, event.subject, self._tell(tp, record.offset, event))

    def _reject(self, inflight: Inflight, record: Record, reason: str, detail: str) -> None:
        tp = TopicPartition(record.topic, record.partition)
        why = letter(record, self.settings.teller_group_id, reason, detail)
        inflight.start(tp, record.offset, None, self.dead_letter(why))

    async def _tell(self, tp: TopicPartition, offset: int, event: IncidentEvent) -> None:
        incident = event.subject
        if self._latest.get(incident) != (tp, offset):  # a later record of it came meanwhile
            INCIDENTS_TOLD.labels("superseded").inc()
            return
        try:
            await self._tell_latest(event)
        finally:
            if self._latest.get(incident) == (tp, offset):
                del self._latest[incident]

    async def _tell_latest(self, event: IncidentEvent) -> None:
        incident = event.subject
        told = self.ledger.told(incident)
        if told is None and self._too_old(event):
            INCIDENTS_TOLD.labels("nothing").inc()
            return
        if told is not None and told.thread is not None:
            self.notifier.threads.setdefault(incident, told.thread)
            if told.digest:
                self.notifier.digested.add(incident)
        plan = telling(incident, event.payload, told)
        if plan.empty:
            INCIDENTS_TOLD.labels("nothing").inc()
            return
        await self._carry_out(plan, told)

    async def _carry_out(self, plan: Telling, told: Told | None) -> None:
        incident = plan.incident
        shown = self.notifier.show(incident, plan.parent) if plan.parent is not None else None
        replied = [self.notifier.reply(incident, r.message) for r in plan.replies]
        parent: Delivery | None = await shown if shown is not None else None
        replies = list(await asyncio.gather(*replied))
        if parent is not None:
            first = told is None or told.thread is None
            INCIDENTS_TOLD.labels(_told(parent, "opened" if first else "updated")).inc()
        for reply in replies:
            INCIDENTS_TOLD.labels(_told(reply, "replied")).inc()
        after = told_after(
            told,
            plan,
            parent,
            replies,
            self.notifier.threads.get(incident),
            incident in self.notifier.digested,
        )
        await self.ledger.record_told(after)

    def _too_old(self, event: IncidentEvent) -> bool:
        p = event.payload
        if p.state != "resolved" or p.resolved_at is None:
            return False
        within = timedelta(seconds=self.settings.tell_resolved_within_s)
        return self.clock() - p.resolved_at > within


def _told(delivery: Delivery, what: str) -> str:
    return what if delivery.told else "lost"
