"""The idempotency ledger: what was done per trigger id, on a compacted topic, read back on start.

A trigger is acted on at most once. `started` is written before the first adapter call, so a
worker that dies mid-action leaves the trigger *in doubt*: the next worker refuses to guess and
reports it rather than possibly draining or requeueing twice. `dry_run` entries never block a
real run later. The ledger also carries the Slack thread of each incident and is the history the
circuit breakers count, so both survive restarts with it; beside the entries, keyed
`told/<incident>`, it keeps what the incident teller last told of each incident (`Told`), and
keyed `ended/<silence>`, that a silence's end was told (`EndTold`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Annotated, Any, Literal

import structlog
from aiokafka.errors import KafkaError, KafkaTimeoutError
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, wait_random_exponential

from schemas.envelope import utcnow
from schemas.runtime import kafka_clients
from schemas.runtime.outages import OUTAGES
from schemas.runtime.settings import KafkaSettings
from schemas.runtime.topic_reader import TopicReader
from schemas.topics import topic_name

log = structlog.get_logger("actions.ledger")

Outcome = Literal["started", "succeeded", "failed", "skipped", "held", "dry_run"]
# What may have been done, so what the circuit breakers count: `started` is an action in doubt.
ACTED: tuple[Outcome, ...] = ("succeeded", "started", "dry_run")
DRAIN, RELEASE = "quarantine_nodes", "release_nodes"  # the actions that take nodes out and back


class ThreadRef(BaseModel):
    """Where an incident's Slack thread lives."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    channel: str
    ts: str


class LedgerEntry(BaseModel):
    """The record of one trigger id; the latest one per key is what compaction keeps."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["LedgerEntry"] = "LedgerEntry"
    trigger_id: uuid.UUID
    trigger_type: str
    action: str
    cluster: str
    subject: str
    rule: str | None = Field(default=None, description="The rule that decided it, if one did.")
    nodes: tuple[str, ...] = Field(default=(), description="Nodes the action targets.")
    outcome: Outcome
    attempts: int = Field(default=0, ge=0)
    detail: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    incident: str
    thread: ThreadRef | None = None
    batch: str | None = Field(default=None, description="The batch of a batched drain.")
    held_by: str | None = Field(default=None, description="The silence that held it.")
    recorded_at: AwareDatetime = Field(default_factory=utcnow)

    def to_bytes(self) -> bytes:
        return self.__pydantic_serializer__.to_json(self)

    @classmethod
    def from_bytes(cls, data: bytes) -> LedgerEntry:
        return cls.model_validate_json(data)

    def blocks(self, *, dry_run: bool) -> bool:
        """Whether this entry means a new delivery of its trigger must do nothing."""
        return dry_run or self.outcome != "dry_run"


class Told(BaseModel):
    """What the incident teller last told of an incident: where its thread is, what its parent
    message showed (a fingerprint), which steps were replied."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["Told"] = "Told"
    incident: str
    thread: ThreadRef | None = None
    digest: bool = Field(default=False, description="Its parent is a digest message's.")
    parent: str = Field(default="", description="Fingerprint of the parent as last shown.")
    refused: bool = False
    notes: int = Field(default=0, ge=0, description="The incident's notes told so far.")
    resolved: bool = False
    told_at: AwareDatetime = Field(default_factory=utcnow)

    @property
    def key(self) -> str:
        return f"told/{self.incident}"

    def to_bytes(self) -> bytes:
        return self.__pydantic_serializer__.to_json(self)


class EndTold(BaseModel):
    """A silence's end was told to people (what it held, that rules decide afresh): once, by
    whichever worker owns the silence, whatever restarts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["EndTold"] = "EndTold"
    silence_id: str
    thread: ThreadRef | None = None
    held: int = Field(default=0, ge=0, description="Decisions it held, as told.")
    told_at: AwareDatetime = Field(default_factory=utcnow)

    @property
    def key(self) -> str:
        return f"ended/{self.silence_id}"

    def to_bytes(self) -> bytes:
        return self.__pydantic_serializer__.to_json(self)


Record = Annotated[LedgerEntry | Told | EndTold, Field(discriminator="kind")]
_RECORD: TypeAdapter[LedgerEntry | Told | EndTold] = TypeAdapter(Record)


class History:
    """What the circuit breakers read: entries of actions that were (or may have been) done, by
    cluster and action, and by subject too. Refusals and failures are not kept here, so a storm
    of refused triggers makes no guard slower; `planned` says whether shadow runs count.

    Drains and releases are also kept per node, with each node's standing (drained since when)
    updated as they come: the share breaker reads a whole cluster's standing on every drain, and
    folding every drain and release again each time made a cluster with many of them crawl."""

    def __init__(self, *, planned: bool) -> None:
        self.planned = planned
        self._by_action: dict[tuple[str, str], dict[uuid.UUID, LedgerEntry]] = {}
        self._by_subject: dict[tuple[str, str, str], dict[uuid.UUID, LedgerEntry]] = {}
        self._moves: dict[tuple[str, str], dict[uuid.UUID, LedgerEntry]] = {}  # (cluster, node)
        self._standing: dict[tuple[str, str], LedgerEntry] = {}  # (cluster, node): latest move
        self._drained: dict[str, dict[str, datetime]] = {}  # cluster: node: drained at

    @classmethod
    def of(cls, entries: Iterable[LedgerEntry], *, planned: bool = False) -> History:
        history = cls(planned=planned)
        for entry in entries:
            history.put(None, entry)
        return history

    def acted(self, cluster: str, action: str, subject: str | None = None) -> list[LedgerEntry]:
        if subject is None:
            return list(self._by_action.get((cluster, action), {}).values())
        return list(self._by_subject.get((cluster, action, subject), {}).values())

    def moves(self, cluster: str, node: str) -> list[LedgerEntry]:
        """The node's drains and releases, in the order they were read."""
        return list(self._moves.get((cluster, node), {}).values())

    def standing(self, cluster: str, node: str) -> LedgerEntry | None:
        """The node's latest drain or release (done, or maybe done, without error)."""
        return self._standing.get((cluster, node))

    def drained(self, cluster: str) -> dict[str, datetime]:
        """Nodes whose latest drain or release (done, or maybe done, without error) is a drain,
        with when it was recorded."""
        return self._drained.get(cluster, {})

    def put(self, old: LedgerEntry | None, new: LedgerEntry) -> None:
        """`new` replaces `old`, the previous entry of the same trigger, if any."""
        if old is not None:
            self._by_action.get((old.cluster, old.action), {}).pop(old.trigger_id, None)
            key = (old.cluster, old.action, old.subject)
            self._by_subject.get(key, {}).pop(old.trigger_id, None)
            for node in self._nodes_moved(old):
                self._moves.get((old.cluster, node), {}).pop(old.trigger_id, None)
        if new.outcome in ACTED and (self.planned or new.outcome != "dry_run"):
            self._by_action.setdefault((new.cluster, new.action), {})[new.trigger_id] = new
            key = (new.cluster, new.action, new.subject)
            self._by_subject.setdefault(key, {})[new.trigger_id] = new
            for node in self._nodes_moved(new):
                self._moves.setdefault((new.cluster, node), {})[new.trigger_id] = new
        nodes = {n: None for e in (old, new) for n in self._nodes_moved(e)}
        for node in nodes:
            self._stand(new.cluster, node, old, new)

    @staticmethod
    def _nodes_moved(entry: LedgerEntry | None) -> tuple[str, ...]:
        return entry.nodes if entry is not None and entry.action in (DRAIN, RELEASE) else ()

    def _stand(self, cluster: str, node: str, old: LedgerEntry | None, new: LedgerEntry) -> None:
        """The node's standing after `new` replaced `old`: the latest move without error (of
        moves recorded at the same time, the one read last). Found without a scan of the
        node's moves unless the standing move itself is taken back."""
        key = (cluster, node)
        moves = self._moves.get(key, {})
        standing = self._standing.get(key)
        counts = moves.get(new.trigger_id) is new and new.error is None
        if standing is not None and old is not None and standing.trigger_id == old.trigger_id:
            if counts and new.recorded_at >= old.recorded_at:
                standing = new
            else:
                standing = None
                for entry in moves.values():
                    if entry.error is None and (
                        standing is None or entry.recorded_at >= standing.recorded_at
                    ):
                        standing = entry
        elif counts and (standing is None or new.recorded_at >= standing.recorded_at):
            standing = new
        drained = self._drained.setdefault(cluster, {})
        if standing is None:
            self._standing.pop(key, None)
        else:
            self._standing[key] = standing
        if standing is not None and standing.action == DRAIN:
            drained[node] = standing.recorded_at
        else:
            drained.pop(node, None)


class Ledger:
    """The ledger in memory; `record` is where a durable ledger persists first."""

    def __init__(self) -> None:
        self._entries: dict[uuid.UUID, LedgerEntry] = {}
        self._told: dict[str, Told] = {}
        self._ended: dict[str, EndTold] = {}
        self._histories = {planned: History(planned=planned) for planned in (False, True)}

    def get(self, trigger_id: uuid.UUID) -> LedgerEntry | None:
        return self._entries.get(trigger_id)

    def entries(self) -> list[LedgerEntry]:
        return list(self._entries.values())

    def history(self, *, planned: bool) -> History:
        """What guards count; in shadow mode (`planned`) what was planned counts too, so shadow
        trips where live would."""
        return self._histories[planned]

    def threads(self) -> dict[str, ThreadRef]:
        threads = {e.incident: e.thread for e in self._entries.values() if e.thread is not None}
        return threads | {i: t.thread for i, t in self._told.items() if t.thread is not None}

    def told(self, incident: str) -> Told | None:
        return self._told.get(incident)

    def end_told(self, silence_id: str) -> EndTold | None:
        return self._ended.get(silence_id)

    async def record(self, entry: LedgerEntry) -> None:
        self._apply((entry,))

    async def record_told(self, told: Told) -> None:
        self._apply((told,))

    async def record_end_told(self, told: EndTold) -> None:
        self._apply((told,))

    async def refresh(self) -> None:
        """Catch up with what other workers recorded (nothing to do for one in memory)."""

    def _apply(self, records: Iterable[LedgerEntry | Told | EndTold]) -> None:
        for entry in records:
            if isinstance(entry, Told):
                self._told[entry.incident] = entry
                continue
            if isinstance(entry, EndTold):
                self._ended[entry.silence_id] = entry
                continue
            old = self._entries.get(entry.trigger_id)
            self._entries[entry.trigger_id] = entry
            for history in self._histories.values():
                history.put(old, entry)


class KafkaLedger(Ledger):
    """The ledger on the `action-ledger` topic (compacted, keyed by trigger id)."""

    def __init__(self, kafka: KafkaSettings, *, load_timeout_s: float = 30.0) -> None:
        super().__init__()
        self.kafka = kafka
        self.topic = topic_name("action-ledger", kafka)
        self._producer = kafka_clients.producer(kafka, client_id=f"{kafka.client_id}-ledger")
        self._reader = ledger_reader(
            kafka,
            self,
            client_id=f"{kafka.client_id}-ledger-load",
            timeout_s=load_timeout_s,
            on_read=lambda count: log.info(
                "ledger_loaded", records=count, triggers=len(self._entries)
            ),
        )

    async def start(self) -> None:
        """Open the producer; entries are read by `load`, on every partition assignment."""
        await self._producer.start()

    async def stop(self) -> None:
        await self._reader.stop()
        await self._producer.stop()

    async def record(self, entry: LedgerEntry) -> None:
        await self._send(str(entry.trigger_id), entry.to_bytes())
        await super().record(entry)

    async def record_told(self, told: Told) -> None:
        await self._send(told.key, told.to_bytes())
        await super().record_told(told)

    async def record_end_told(self, told: EndTold) -> None:
        await self._send(told.key, told.to_bytes())
        await super().record_end_told(told)

    async def _send(self, key: str, value: bytes) -> None:
        """Durable before it counts; retried while the broker is away (until cancelled), never
        when the broker refuses the record itself."""
        async for attempt in retrying_transient("ledger_record"):
            with attempt:
                await self._producer.send_and_wait(self.topic, value=value, key=key.encode())

    async def refresh(self) -> None:
        """Read what was recorded since the last read (reads asked for at once are shared)."""
        await self._reader.refresh()

    async def load_retrying(self, stop: asyncio.Event) -> None:
        """`load`, again and again while the broker is away, unless stopped."""
        async for attempt in retrying_transient("ledger_load", stop):
            with attempt:
                await self.load()

    async def load(self, *, since_last: bool = False) -> None:
        """Read the whole topic up to its current end (triggers and ledger are not co-partitioned,
        so any worker may need any entry); `since_last`: from where the last read ended."""
        await self._reader.load(since_last=since_last)


def ledger_reader(
    kafka: KafkaSettings,
    ledger: Ledger,
    *,
    client_id: str,
    timeout_s: float = 30.0,
    on_read: Callable[[int], None] = lambda count: None,
) -> TopicReader:
    """A reader of the ledger's topic into `ledger`: its entries and what was told."""
    return TopicReader(
        kafka,
        topic_name("action-ledger", kafka),
        lambda records: ledger._apply(_entries(records)),
        client_id=client_id,
        timeout_s=timeout_s,
        on_read=on_read,
    )


async def read_ledger(kafka: KafkaSettings, *, timeout_s: float = 30.0) -> Ledger:
    """The whole ledger as it stands now, read once (what a command shows people)."""
    ledger = Ledger()
    client_id = f"{kafka.client_id}-ledger-read"
    reader = ledger_reader(kafka, ledger, client_id=client_id, timeout_s=timeout_s)
    try:
        await reader.load()
    finally:
        await reader.stop()
    return ledger


def _entries(records: Iterable[Any]) -> Iterator[LedgerEntry | Told | EndTold]:
    """Entries of the ledger and what was told; anything else found on its topic is logged and
    passed over."""
    for r in records:
        if not r.value:
            continue
        try:
            yield _RECORD.validate_json(r.value)
        except ValidationError as exc:
            log.error("ledger_entry_invalid", offset=r.offset, error=str(exc)[:300])


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, KafkaError):
        # A request (a send, a read of offsets) that timed out: the broker away longer than it.
        return bool(exc.retriable) or isinstance(exc, KafkaTimeoutError)
    return isinstance(exc, (TimeoutError, OSError))


def retrying_transient(what: str, stop: asyncio.Event | None = None) -> AsyncRetrying:
    def log_retry(state: RetryCallState) -> None:
        if OUTAGES.explains("kafka"):  # the outage's own lines say it
            return
        error = state.outcome.exception() if state.outcome else None
        log.warning(f"{what}_retry", attempt=state.attempt_number, error=repr(error)[:300])

    return AsyncRetrying(
        retry=retry_if_exception(_transient),
        wait=wait_random_exponential(multiplier=0.2, max=10),
        stop=lambda _: stop is not None and stop.is_set(),
        before_sleep=log_retry,
        reraise=True,
    )
