"""When a silence ends (its time ran out, or an operator expired it), people get one message:
what it held, and that rules decide afresh now.

One, across any number of action workers and their restarts: a silence's end is told by the
worker assigned the triggers-topic partition its id hashes to (Kafka's partitioner), and only
once the ledger says nobody told it yet; the worker records that it told it (`EndTold`, keyed
`ended/<silence>`) once Slack took the message. From the moment its partitions are being handed
over until its new ones are assigned, it starts no tell, and one under way is let finish and
recorded first (the consumer's `Handover`), so the next owner reads it. A message Slack never
took is tried again at the next look.

A silence that ended more than `within_s` ago when a worker first reads it (a new worker reading
the topic's past, or one down longer than that) is not told: it is old news.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

import structlog
from aiokafka import AIOKafkaConsumer

from actions.holds import held_by_silence
from actions.ledger import EndTold, Ledger
from actions.silences import Silence, Silences
from actions.slack.holds import ended_message
from actions.slack.notifier import Notifier
from schemas.envelope import utcnow
from schemas.placement import partition_for

log = structlog.get_logger("actions.silences")

Owns = Callable[[str], bool]


def ended_untold(
    silences: Iterable[Silence],
    now: datetime,
    told: Callable[[str], object],
    owns: Owns,
    within_s: float,
) -> list[Silence]:
    """The silences whose end this worker must tell now: ended, lately, not told, its own."""
    since = now - timedelta(seconds=within_s)
    return sorted(
        (
            s
            for s in silences
            if since <= s.ends_at <= now and told(s.silence_id) is None and owns(s.silence_id)
        ),
        key=lambda s: (s.ends_at, s.silence_id),
    )


def owner(consumer: AIOKafkaConsumer, topic: str) -> Owns:
    """Whether `consumer` (in its group) is assigned the partition of `topic` a key hashes to."""

    def owns(key: str) -> bool:
        partitions = consumer.partitions_for_topic(topic)
        if not partitions:
            return False
        mine = {tp.partition for tp in consumer.assignment() if tp.topic == topic}
        return partition_for(key.encode(), len(partitions)) in mine

    return owns


class SilenceEnds:
    def __init__(
        self,
        silences: Silences,
        ledger: Ledger,
        notifier: Notifier,
        owns: Owns,
        *,
        within_s: float,
        poll_s: float,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.silences = silences
        self.ledger = ledger
        self.notifier = notifier
        self.owns = owns
        self.within_s = within_s
        self.poll_s = poll_s
        self.clock = clock
        self._telling = asyncio.Lock()
        self._handing_over = False  # partitions revoked, the new ones not assigned yet

    async def run(self, stop: asyncio.Event) -> None:
        """A look every `poll_s` until `stop`; a look that fails (Kafka away) is logged, the
        next one tries again."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.poll_s)
            if stop.is_set():
                return
            try:
                await self.tell_ended()
            except Exception as exc:
                log.warning("silence_ends_unread", error=f"{type(exc).__name__}: {exc}")

    async def revoking(self, grace_s: float) -> None:
        """No tell starts until `assigned`; one under way is let finish (at most `grace_s`)."""
        self._handing_over = True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace_s), self._telling:
                pass

    def assigned(self) -> None:
        self._handing_over = False

    async def tell_ended(self) -> int:
        """Tell the ends due now; how many were told."""
        async with self._telling:
            await self.silences.refresh()
            if not self._due():
                return 0
            await self.ledger.refresh()  # another worker may have told them (a hand-over)
            told = 0
            for silence in self._due():
                if self._handing_over:  # revoked meanwhile: the next owner tells the rest
                    break
                told += await self._tell(silence)
            return told

    def _due(self) -> list[Silence]:
        if self._handing_over:
            return []
        return ended_untold(
            self.silences.all(), self.clock(), self.ledger.end_told, self.owns, self.within_s
        )

    async def _tell(self, silence: Silence) -> bool:
        held = held_by_silence(
            e for e in self.ledger.entries() if e.held_by == silence.silence_id
        ).get(silence.silence_id)
        key = f"silence/{silence.silence_id}"
        delivery = await self.notifier.reply(key, ended_message(silence, held))
        if not delivery.told:
            log.warning("silence_end_untold", silence=silence.silence_id, error=delivery.error)
            return False
        told = EndTold(
            silence_id=silence.silence_id,
            thread=delivery.thread,
            held=held.decisions if held is not None else 0,
        )
        await self.ledger.record_end_told(told)
        log.info("silence_end_told", silence=silence.silence_id, held=told.held)
        return True
