"""Silences, as the action worker holds them: read whole from their compacted topic, each one
proven by its operator's signature and authority over its cluster, then matched against what
rules decide. A silence that no trusted operator may have set is ignored (and logged once).

A decision a silence matches is held: recorded (an `ActionHeld` naming the silence, the ledger,
a message to people) and not carried out. Operators' commands are never held: they are
what people do during the window.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

import hostlist
import structlog

from schemas.codec import DecodeError, decode
from schemas.events import Notify, SilenceAdded, SilenceExpired, Trigger
from schemas.operators import Operator, Unauthenticated, authenticate
from schemas.runtime.settings import KafkaSettings
from schemas.runtime.topic_reader import Records, TopicReader
from schemas.topics import topic_name

log = structlog.get_logger("actions.silences")


@dataclass(frozen=True)
class Silence:
    silence_id: str
    cluster: str
    nodes: frozenset[str] | None  # None: the whole cluster
    rule: str | None
    action: str | None
    starts_at: datetime
    ends_at: datetime
    reason: str
    operator: str
    ended_by: str | None = None  # the operator who ended it early, if one did
    end_reason: str | None = None

    @classmethod
    def of(cls, event: SilenceAdded) -> Silence:
        p = event.payload
        nodes = frozenset(hostlist.expand_hostlist(p.nodes)) if p.nodes else None
        return cls(
            p.silence_id,
            event.cluster,
            nodes,
            p.rule,
            p.action,
            p.starts_at,
            p.ends_at,
            p.reason,
            p.operator,
        )

    def holds(self, trigger: Trigger, action: str, now: datetime) -> bool:
        if trigger.cluster != self.cluster or not self.starts_at <= now < self.ends_at:
            return False
        if self.rule is not None and trigger.payload.rule != self.rule:
            return False
        if self.action is not None:
            if self.action not in (trigger.type, action):
                return False
        elif isinstance(trigger, Notify):
            return False  # a silence holds actions; people are still told
        if self.nodes is None:
            return True
        # A decision about several nodes is held whole when the silence covers one of them.
        named = set(getattr(trigger.payload, "nodes", ())) or {trigger.subject}
        return not self.nodes.isdisjoint(named)

    def said(self) -> str:
        """Who set it and why, as people wrote it."""
        return f"{self.operator}: {self.reason}"

    def words(self) -> str:
        return (
            f"held by silence {self.silence_id} until {self.ends_at.isoformat()} "
            f"({self.operator}: {self.reason})"
        )


class Silences:
    """Every silence read so far, by id; `refresh` catches up where a topic is behind them."""

    def __init__(self, trusted: dict[str, Operator]) -> None:
        self.trusted = trusted
        self._by_id: dict[str, Silence] = {}
        self._ignored: set[str] = set()

    def all(self) -> list[Silence]:
        return list(self._by_id.values())

    def holding(self, trigger: Trigger, action: str, now: datetime) -> Silence | None:
        """The silence holding this decision now, if any (an operator's command: none)."""
        if trigger.payload.operator is not None:
            return None
        return next((s for s in self._by_id.values() if s.holds(trigger, action, now)), None)

    async def refresh(self) -> None:
        """Nothing to catch up with in memory."""

    def apply(self, records: Records) -> None:
        for record in records:
            if record.value:
                self.take(record.value, record.headers)

    def take(self, value: bytes, headers: list[tuple[str, bytes]] | None) -> None:
        """One record of the silences topic: a signed silence added or ended."""
        try:
            [event] = decode(value)
        except (DecodeError, ValueError) as exc:
            return self._ignore(str(value[:64]), f"unreadable: {exc}")
        if not isinstance(event, (SilenceAdded, SilenceExpired)):
            return self._ignore(event.subject, f"not a silence: {event.type}")
        try:
            name, operator = authenticate(value, headers, self.trusted)
        except Unauthenticated as exc:
            return self._ignore(event.payload.silence_id, str(exc))
        if name != event.payload.operator or not operator.may_touch(event.cluster):
            why = f"operator {name} may not silence cluster {event.cluster}"
            return self._ignore(event.payload.silence_id, why)
        if isinstance(event, SilenceAdded):
            self._by_id[event.payload.silence_id] = Silence.of(event)
            return None
        known = self._by_id.get(event.payload.silence_id)
        early = known is not None and event.occurred_at < known.ends_at
        if known is not None and early and known.cluster == event.cluster:
            p = event.payload
            self._by_id[known.silence_id] = replace(
                known, ends_at=event.occurred_at, ended_by=p.operator, end_reason=p.reason
            )
        return None

    def _ignore(self, silence_id: str, why: str) -> None:
        if silence_id not in self._ignored:
            self._ignored.add(silence_id)
            log.warning("silence_ignored", silence=silence_id, why=why)


class KafkaSilences(Silences):
    """The silences on their topic, read whole on start and caught up before each decision."""

    def __init__(self, kafka: KafkaSettings, trusted: dict[str, Operator]) -> None:
        super().__init__(trusted)
        self._reader = TopicReader(
            kafka,
            topic_name("silences", kafka),
            self.apply,
            client_id=f"{kafka.client_id}-silences",
            # Caught up before every decision: only a read that found something is news.
            on_read=lambda count: (log.info if count else log.debug)(
                "silences_loaded", records=count, silences=len(self._by_id)
            ),
        )

    async def load(self) -> None:
        await self._reader.load()

    async def refresh(self) -> None:
        await self._reader.refresh()

    async def stop(self) -> None:
        await self._reader.stop()
