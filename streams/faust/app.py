"""The streams worker, built by `create_app()`. Run it with `centrality streams` (which runs
`python -m streams worker --without-web`); importing this module builds nothing.

The Faust wiring (app, topics, tables, agents) is `streams.faust.topology`'s. The agents hand
records over one at a time, or behind a backlog several together (`streams.faust.batching`), to
`StreamsApp.handle_records`: each decoded and placed, their events grouped by entity, each
entity's events of all of them **planned** (`streams.brain.plan`, pure: fold, decide, view,
encode, bound, record by record) and the plan **delivered** once (`StreamsApp._deliver`: send
the triggers and the derived events, await the triggers, write the table behind the rest).
Writing last (after the outputs are acknowledged) means a stored state never claims a decision
that was not delivered; a crash before the write re-decides on redelivery, with the same trigger
ids. Only triggers are awaited: the write waits for the forwards and statuses
(`streams.faust.write_behind`) while the agent goes on.

No message stops the worker: whatever fails while decoding, placing, folding, deciding or
sending a trigger for a message is that message's failure. It is dead-lettered with its reason
and raw bytes, and the worker goes on. (A forward or status record the broker keeps refusing is
the app's own failure, as a changelog record's is: the worker stops before committing past it,
`streams.faust.write_behind`.) Transient failures (broker away) are retried with jittered
backoff for `send_retry_s` first (`streams.faust.failures`); deterministic ones never are.
Every trigger is signed (`schemas.signing`): action workers obey nothing else.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

import faust
import orjson
import structlog
from faust.types import TP
from pydantic import SecretStr

from schemas.codec import DecodeError, decode, encode
from schemas.deadletter import DeadLetter
from schemas.envelope import Event
from schemas.placement import partition_for
from schemas.registry import build_decoders
from schemas.runtime import collector, malloc, tracing
from schemas.runtime.deadletter import count_dead_letter
from schemas.runtime.metrics.catalog import (
    DECISIONS,
    EVENTS_IN,
    EVENTS_OUT,
    PROCESSING_SECONDS,
    count_types,
    labelled,
)
from schemas.runtime.settings import KafkaSettings
from schemas.signing import SigningSettings, signed_headers
from streams.brain.plan import Plan, Refused, plan_records
from streams.brain.timers import Timers
from streams.brain.views import Views
from streams.faust import batches
from streams.faust import transport as faust_transport
from streams.faust.batching import acting_for
from streams.faust.clean_start import guard
from streams.faust.failures import call_retrying, transient
from streams.faust.lanes import LanedApp
from streams.faust.read_positions import Fetched, ReadPositions
from streams.faust.state_cache import StateCache
from streams.faust.topology import agents, wire
from streams.faust.write_behind import Resend, WriteBehind
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.state.bounds import ID_CHARS_MAX
from streams.state.entities import Kind, forwarded, kind_of
from streams.state.internal import tick

log = structlog.get_logger("streams")

DEAD_LETTER_RAW_MAX = 512 * 1024  # base64 in JSON: ~700 KB, under the same limit


def create_app() -> LanedApp:
    """The streams worker's Faust app, from the environment's settings (`python -m streams`)."""
    tracing.configure("centrality-streams")
    key = SigningSettings().require("the streams worker")  # no unsigned decisions, ever
    settings = StreamsSettings()
    malloc.map_large_blocks(settings.mmap_threshold_bytes)  # before the first fetch is buffered
    return StreamsApp(KafkaSettings(), settings, key).app


class StreamsApp:
    """The per-message work of the worker, on the records of its topology."""

    def __init__(
        self,
        kafka: KafkaSettings,
        settings: StreamsSettings,
        signing_key: SecretStr,
        engine: RuleEngine | None = None,
    ) -> None:
        self.kafka, self.settings, self.signing_key = kafka, settings, signing_key
        self.engine = engine or RuleEngine.load(
            settings.rule_modules, settings.rule_config, settings.incident_window_s
        )
        self.views = Views(self.engine)
        self.top = wire(kafka, settings, overtaken=self.hold_ticks_for)
        self.reads = ReadPositions()
        self.cache = StateCache(settings.state_cache_entries)
        # The producer's flush settles it before every commit (streams.faust.commit).
        self.writes = self.app.writes = WriteBehind(
            settings.send_retry_s, lambda: self.app.should_stop
        )
        # What is due when, per kind and partition held here: built from the table at the
        # partition's first tick (a sweep of its keys, once), then kept as events are folded, so
        # a tick touches only the entities something is due for. A tick that swept every key held
        # the node agent, and the fatal XIDs queued behind it, 0.1 to 0.26 s per partition every
        # tick at 4,000 nodes. A rebalance forgets them all.
        self.timers: dict[tuple[str, int], Timers] = {}
        self._traced: set[str] = set()
        self.fold_jobs, self.fold_nodes = agents(
            self.top, self.handle_records, self.writes.release, settings.fold_records_max
        )
        self._register()

    @property
    def app(self) -> LanedApp:
        return self.top.app

    def _register(self) -> None:
        """The leader's clock and the worker's signals, on the app."""
        app = self.app
        app.timer(self.settings.tick_interval_s, on_leader=True, name="streams.faust.app.clock")(
            self.clock
        )
        if self.settings.heap_trim_interval_s > 0:
            app.timer(self.settings.heap_trim_interval_s, name="streams.faust.app.trim_heap")(
                self.trim_heap
            )
        # The stubs want `signal` as a keyword of every receiver; Faust passes it in kwargs.
        app.on_partitions_revoked.connect(self.forget_states)  # type: ignore[arg-type]
        app.on_worker_init.connect(self.trust_only_clean_stores)  # type: ignore[arg-type]
        app.on_worker_init.connect(self.spare_the_heap_from_collections)  # type: ignore[arg-type]

    async def trim_heap(self) -> None:
        """The worker's garbage cycles freed (a full pass, which its thresholds make rare:
        `schemas.runtime.collector`; ~17 ms over 2,000 nodes' states, ~35,000 objects), and what
        it freed back to the system (`schemas.runtime.malloc.trim`): a few ms a minute where the
        heap holds a hundred MB."""
        gc.collect()
        malloc.trim()

    def hold_ticks_for(self, message: Any) -> None:
        """A routine record queued behind later ones of its partition: its partition's ticks
        wait for it. Not one fetched before a rebalance that Faust's conductor queues after it:
        the stream skips such a record unfolded (its generation is over), and would hold them
        for good."""
        if message.generation_id == self.app.consumer_generation_id:
            self.reads.overtaken(
                message.topic, message.partition, message.offset, message.timestamp
            )

    async def handle_records(self, records: Sequence[Any], writes: frozenset[str]) -> None:
        """Records (Faust events) the agent that writes the tables `writes` handed over
        together (`streams.faust.batching`), in order. A tick is handled alone, after the
        records before it; the records between ticks are folded together (`_fold_together`).
        A traced worker handles each record alone: each is its own trace. States written
        while records are folded together are held (`WriteBehind.holding`): a later batch
        folding the same entity replaces them, until the agents are idle."""
        together = len(records) > 1
        self.writes.holding += together
        try:
            await self._handle_records(records, writes)
        finally:
            self.writes.holding -= together

    async def _handle_records(self, records: Sequence[Any], writes: frozenset[str]) -> None:
        if len(records) == 1 or tracing.enabled():
            for record in records:
                with acting_for(record):
                    await self.handle_message(record.message, writes)
            return
        run: list[Any] = []
        for record in records:
            if record.message.topic not in self.top.ticks:
                run.append(record)
                continue
            await self._fold_together(run, writes)
            run = []
            with acting_for(record):
                await self.handle_message(record.message, writes)
        await self._fold_together(run, writes)

    async def _fold_together(self, records: Sequence[Any], writes: frozenset[str]) -> None:
        """Each record decoded and placed (or dead-lettered) in turn, and what concerns another
        agent handed over; then each entity's events of all of them planned and delivered once
        (`_entity`), in the order the entities first came."""
        if not records:
            return
        started = time.perf_counter()
        entities: dict[tuple[str, str], tuple[Kind, list[Any], list[Sequence[Event]]]] = {}
        for record in records:  # nothing here reads or writes a table
            message = record.message
            try:
                mine = await self._handed_over(await self._decoded(message), writes)
            except Exception as exc:  # as in `handle_message`: it belongs to this record
                self._log_failure(exc, message)
                await self._dead_letter("processing-error", f"{type(exc).__name__}: {exc}", message)
                continue
            for entity, (kind, events) in mine.items():
                _, held, events_of = entities.setdefault(entity, (kind, [], []))
                held.append(record)
                events_of.append(events)
        for (_, key), (kind, held, events_of) in entities.items():
            with acting_for(held[-1]):  # all of an entity's records are of its partition
                await self._entity(kind, key, [r.message for r in held], events_of)
        share = (time.perf_counter() - started) / len(records)
        for record in records:
            message = record.message
            self.reads.folded(message.topic, message.partition, message.offset, message.timestamp)
            _MESSAGE_SECONDS.observe(share)

    async def handle_message(self, message: Any, writes: frozenset[str]) -> None:
        """One record read by the agent that writes the tables `writes` (within `acting_for`
        its Faust event)."""
        started = time.perf_counter()
        try:
            await self._handle_message(message, writes)
        except Exception as exc:  # the last line: whatever escaped belongs to this message
            self._log_failure(exc, message)
            await self._dead_letter("processing-error", f"{type(exc).__name__}: {exc}", message)
        finally:
            self.reads.folded(message.topic, message.partition, message.offset, message.timestamp)
            _MESSAGE_SECONDS.observe(time.perf_counter() - started)

    async def _handle_message(self, message: Any, writes: frozenset[str]) -> None:
        if message.topic in self.top.ticks:
            try:
                await self.handle_tick(self.top.ticks[message.topic], message)
            except Exception:  # a tick must never take the agent down; the next one retries
                log.exception("tick_failed", topic=message.topic, partition=message.partition)
            return
        if not tracing.enabled():  # the per-message path stays as cheap as it was
            await self._handle_record(message, writes)
            return
        with tracing.span(
            f"process {message.topic}",
            lambda: _consumed(message),
            kind=tracing.CONSUMER,
            headers=message.headers,
        ):
            await self._handle_record(message, writes)

    async def _handle_record(self, message: Any, writes: frozenset[str]) -> None:
        mine = await self._handed_over(await self._decoded(message), writes)
        for (_, key), (kind, events) in mine.items():
            await self._entity(kind, key, [message], [events])

    async def _handed_over(
        self, events: Sequence[Event], writes: frozenset[str]
    ) -> dict[tuple[str, str], tuple[Kind, list[Event]]]:
        """Of a record's events, those of the tables `writes`, by entity; the rest handed over."""
        mine: dict[tuple[str, str], tuple[Kind, list[Event]]] = {}
        for event in events:
            kind = kind_of(event)
            if kind is not None and kind.table in writes:
                mine.setdefault((kind.table, event.subject), (kind, []))[1].append(event)
            else:
                await self._hand_over(event, kind)
        return mine

    async def _decoded(self, message: Any) -> list[Event]:
        """The message's events, decoded and placed; none when it is dead-lettered for that."""
        mark = batches.unreadable(message.headers)
        if mark is not None:
            await self._dead_letter(*mark, message)
            return []
        try:
            events = self.top.decoders.get(message.topic, decode)(message.value)
        except DecodeError as exc:
            await self._dead_letter(exc.reason, exc.detail, message)
            return []
        if message.topic in self.top.placement.topics:
            # Told, not raised: a raised error held in a local is a cycle (its traceback holds
            # this frame, and the frame the record) that only a collector pass frees, and the
            # worker's are rare (schemas.runtime.collector).
            problem = _too_long(events) or self.top.placement.check(
                events, topic=message.topic, key=message.key, partition=message.partition
            )
            if problem is not None:
                await self._dead_letter(problem.reason, problem.detail, message)
                return []
        if events:
            count_types(EVENTS_IN, message.topic, events)
            newest = max(e.occurred_at for e in events).timestamp()
            self.reads.reached(message.topic, message.partition, newest, message.timestamp)
        return events

    async def _hand_over(self, event: Event, kind: Kind | None) -> None:
        """An event with no table (an action result: it concerns those it names), or of a table
        another agent writes (never two writers), to the agent that writes what it concerns."""
        for other in forwarded(event) if kind is None else [event]:
            handed = await self._send(
                self._writer(other), other.key, encode(other), tracing.inject_headers()
            )
            self.writes.after([handed])  # no commit passes this message before it lands
            self._count_forwarded([other])

    async def _entity(
        self, kind: Kind, key: str, messages: list[Any], records: list[Sequence[Event]]
    ) -> None:
        """One entity's events of each of `messages` (`records`, in order), folded and
        delivered together. A failure that is no outage's, if more than one message was
        folded, is found out message by message; the message it is that of is dead-lettered
        (a bug in a fold or rule must not wedge the partition)."""
        try:
            await call_retrying(
                "output",
                lambda: self.fold_entity(kind, key, records),
                self.settings.send_retry_s,
                lambda: self.app.should_stop,
            )
        except Exception as exc:
            if len(messages) > 1 and not transient(exc):
                for message, events in zip(messages, records, strict=True):
                    await self._entity(kind, key, [message], [events])
                return
            for message in messages:
                await self._failed(exc, message)

    async def _failed(self, exc: Exception, message: Any) -> None:
        """`message` dead-lettered for `exc`, or left for redelivery if the worker is stopping
        while Kafka is away."""
        if isinstance(exc, Refused):
            await self._dead_letter(exc.reason, exc.detail, message)
            return
        if self.app.should_stop and transient(exc):
            _leave_for_redelivery(message, exc)
        self._log_failure(exc, message)
        reason = "send-failed" if transient(exc) else "processing-error"
        await self._dead_letter(reason, f"{type(exc).__name__}: {exc}", message)

    def _log_failure(self, exc: Exception, message: Any) -> None:
        """A traceback once per kind of failure: rendering one costs up to seconds, and a storm
        of bad messages must not turn into a storm of tracebacks that starves the worker."""
        where = f"{type(exc).__name__}@{_origin(exc)}"
        fields = {"topic": message.topic, "offset": message.offset, "error": repr(exc)[:1000]}
        if where in self._traced:
            log.error("processing_failed", at=where, **fields)
        else:
            self._traced.add(where)
            log.exception("processing_failed", at=where, **fields)

    def load(self, kind: Kind, key: str) -> Any:
        state = self.writes.pending(kind.table, key)
        if state is None:
            state = self.cache.get(kind.table, key)
        if state is None:
            stored = self.top.tables[kind.table].get(key.encode())
            state = kind.model.model_validate_json(stored) if stored is not None else None
        return state

    async def handle_events(self, kind: Kind, key: str, events: Sequence[Event]) -> None:
        """Fold and decide one entity's events of a message, traced within that message."""
        await self.fold_entity(kind, key, [events])

    async def fold_entity(self, kind: Kind, key: str, records: Sequence[Sequence[Event]]) -> None:
        """Fold and decide one entity's events of one message or more (`records`, each
        message's in turn), traced within the message."""
        if not tracing.enabled():
            changed = await self._fold(kind, key, *records)
        else:
            with tracing.span(
                f"fold {kind.table}",
                lambda: {
                    "centrality.subject": key,
                    "centrality.events": sum(len(events) for events in records),
                },
            ):
                changed = await self._fold(kind, key, *records)
        kept = self.timers.get((kind.table, partition_for(key.encode(), self.top.partitions)))
        if kept is None or not (changed or kept.was_ticked(kind, key)):
            return  # most GPU samples: the same state, nothing new due
        if (state := self.load(kind, key)) is not None:
            kept.changed(kind, key, state)  # it may hold a condition already due: forget its tick

    def _writer(self, event: Event) -> Any:
        """The forward topic of the agent that writes `event`'s table."""
        kind = kind_of(event)
        return self.top.forward_topic if kind is None else self.top.writers[kind.table]

    def _count_forwarded(self, events: Sequence[Event]) -> None:
        for event in events:
            labelled(EVENTS_OUT, self._writer(event).get_topic_name(), event.type).inc()

    async def _fold(self, kind: Kind, key: str, *records: Sequence[Event]) -> bool:
        """Plan (pure) and deliver one entity's events of one message or more (`records`, each
        message's in turn); whether the entity's state changed."""
        most = self.settings.outputs_per_message_max
        state = self.load(kind, key)
        planned = plan_records(kind, state, records, self.engine, self.views, most)
        await self._deliver(kind, key, planned)
        return planned.changed

    async def _deliver(self, kind: Kind, key: str, planned: Plan) -> None:
        """Send the plan's outputs, await its triggers, and write its state behind the rest."""
        # Outputs carry this fold's trace context: the trace goes on where they are consumed.
        # The signature covers the value only, so trace headers never break it.
        headers = tracing.inject_headers()
        behind = [
            await self._send(self._writer(derived), derived.key, encoded, headers)
            for derived, encoded in planned.forwards
        ]
        behind += [
            await self._send(self.top.published[e.topic], e.key, encoded, headers)
            for e, encoded in planned.statuses
        ]
        decided = [
            await self.top.triggers_topic.send(
                key=t.key,
                value=encoded,
                headers=[*headers, *signed_headers(encoded, self.signing_key)],
            )
            for t, encoded in planned.triggers
        ]
        # Every output is acknowledged before the state that remembers it is written. A failed
        # trigger fails this message (retried, or dead-lettered), so a decision is awaited here;
        # forwards and statuses do not hold the agent: the state waits for them
        # (streams.faust.write_behind).
        if decided:
            await asyncio.gather(*decided, *(fut for fut, _ in behind))
        self._count(planned)
        if planned.changed:
            state = planned.step.state
            store = partial(self._store, kind, key, planned.value, state, faust.current_event())
            self.writes.write(kind.table, key, state, store, behind)
        else:  # most GPU samples change nothing: no table write, no changelog record
            self.writes.after(behind)

    def _count(self, planned: Plan) -> None:
        self._count_forwarded(planned.step.forwards)
        for e, _ in planned.statuses:
            labelled(EVENTS_OUT, self.top.catalog(e.topic), e.type).inc()
        for trigger in planned.step.triggers:
            log.info(
                "trigger",
                type=trigger.type,
                id=str(trigger.event_id),
                subject=trigger.subject,
                shadow=trigger.payload.shadow,
            )
            mode = "shadow" if trigger.payload.shadow else "live"
            labelled(DECISIONS, trigger.payload.rule, trigger.type, mode).inc()
            labelled(EVENTS_OUT, self.top.triggers, trigger.type).inc()

    def _store(self, kind: Kind, key: str, value: bytes, state: Any, event: Any) -> None:
        """Write a fold's state. Faust's table takes the changelog partition from the current
        event, which the fold's context holds by weak reference only: `event` is passed along
        to keep it alive until a write made later (`streams.faust.write_behind`)."""
        with acting_for(event):
            self.top.tables[kind.table][key.encode()] = value
        if state.resident:
            self.cache.put(kind.table, key, state)
        else:
            self.cache.drop(kind.table, key)

    async def _send(
        self, topic: Any, key: bytes | None, value: bytes, headers: list[tuple[str, bytes]]
    ) -> tuple[asyncio.Future[Any], Resend]:
        """Send a record the state waits for; its future, and how to send it again."""

        async def again() -> Any:
            return await (await topic.send(key=key, value=value, headers=headers))

        sent = await topic.send(key=key, value=value, headers=headers)
        return asyncio.ensure_future(sent), again  # Faust's FutureMessage: the same future

    async def forget_states(self, sender: Any, *args: Any, **kwargs: Any) -> None:
        self.cache.clear()
        self.timers.clear()
        self.reads.forget()

    def trust_only_clean_stores(self, sender: Any, **kwargs: Any) -> None:
        guard(Path(self.app.conf.tabledir))

    def spare_the_heap_from_collections(self, sender: Any, **kwargs: Any) -> None:
        """Python's full collections stop the loop for the whole heap, and what start-up made
        (modules, Faust, pydantic's schemas) is never garbage: frozen out of them
        (`schemas.runtime.collector.tune`), a full collection took 1.2-1.6 s in all over a
        10,000-node `bench scale` run instead of 2.3-2.5 s, none over 0.35 s (BENCHMARKS.md,
        "Fleet scale"); a fault folded right after one waited that long. The decoders are built
        first (`build_decoders`), so they are part of what is frozen and no record waits for
        one. The thresholds make collections rare: the states the worker holds for seconds
        made Python's own walk the whole heap every ~1.2 s at 10,000 nodes."""
        build_decoders()
        collector.tune(self.settings.gc_thresholds)  # no log line: logging is not set up yet

    async def handle_tick(self, kind: Kind, message: Any) -> None:
        """Tick the entities of `kind` on the tick's partition that something is due for
        (`streams.brain.timers`), at the tick's time or, while the partition's inputs are not folded
        that far, at the time they are (`streams.faust.read_positions`)."""
        assert kind.tick is not None
        sent = datetime.fromisoformat(orjson.loads(message.value)["now"]).timestamp()
        judged = self.reads.judged_at(
            self.top.tick_inputs[kind.table],
            message.partition,
            sent,
            end=self._end_offset,
            start=self._start_offset,
            fetched=self._fetched,
        )
        if judged is None:
            return  # behind by an unknown amount: the next tick asks again
        now = datetime.fromtimestamp(judged, UTC)
        kept = self.timers.get((kind.table, message.partition))
        if kept is None:
            kept = self.timers[(kind.table, message.partition)] = self._timers_of(kind, message)
        for key in kept.due(kind, now):
            state = None
            try:
                state = self.load(kind, key)
                # A tick is no event: it continues no trace and starts none.
                await self._fold(kind, key, [tick(kind.tick, key, state.cluster, now)])
                kept.ticked(kind, key, self.load(kind, key), now)
            except Exception as exc:  # one entity's failure must not keep the others ticking
                self._log_failure(exc, message)
                if state is not None:
                    kept.changed(kind, key, state)  # so the next tick tries it again

    def _end_offset(self, topic: str, partition: int) -> int | None:
        # The high watermark, not the last stable offset: records written after a transaction
        # still open are unread too, and a tick must not judge the silence of the nodes they
        # speak for.
        return self.app.consumer.highwater(TP(topic, partition))

    def _fetched(self, topic: str, partition: int) -> Fetched | None:
        return faust_transport.consumer_of(self.app).fetched(TP(topic, partition))

    def _start_offset(self, topic: str, partition: int) -> int | None:
        # Faust's own record of where it reads next (the committed offset after an assignment)
        # or of the last record it queued; there is no public accessor.
        return self.app.consumer._read_offset.get(TP(topic, partition))  # type: ignore[attr-defined,no-any-return]

    def _timers_of(self, kind: Kind, message: Any) -> Timers:
        """The timers of every entity of `kind` stored in the tick's partition."""
        kept = Timers(self.engine)
        table = self.top.tables[kind.table]
        keys = set(table) | {k.encode() for k in self.writes.pending_keys(kind.table)}
        for key in [
            k.decode() for k in keys if partition_for(k, self.top.partitions) == message.partition
        ]:
            try:
                state = self.load(kind, key)
            except Exception as exc:  # an unreadable state is ticked never, not the others never
                self._log_failure(exc, message)
                continue
            if state is not None:
                kept.changed(kind, key, state)
        return kept

    async def clock(self) -> None:
        value = orjson.dumps({"now": datetime.now(UTC).isoformat()})
        for topic in self.top.ticks_topics.values():
            for partition in range(self.top.partitions):
                await topic.send(value=value, partition=partition)

    async def _dead_letter(self, reason: str, detail: str, message: Any) -> None:
        """A dead letter that cannot be sent is logged, counted and given up, unless the worker
        is stopping meanwhile: then the message is left for redelivery."""
        raw_value = message.value or b""
        if len(raw_value) > DEAD_LETTER_RAW_MAX:
            detail = f"{detail} (raw: first {DEAD_LETTER_RAW_MAX} of {len(raw_value)} bytes)"
            raw_value = raw_value[:DEAD_LETTER_RAW_MAX]
        key = message.key[:1024] if message.key else message.key
        letter = DeadLetter(
            reason=reason,
            detail=detail[:4096],
            consumer=self.settings.app_id,
            topic=message.topic,
            partition=message.partition,
            offset=message.offset,
            key=key,
            raw=raw_value,
        )
        count_dead_letter(letter)  # and logged there, throttled: poison comes in storms
        tracing.annotate({"centrality.dead_letter": reason})
        value, headers = (
            letter.to_bytes(),
            tracing.inject_headers(),
        )  # the letter stays in the trace
        try:
            await call_retrying(
                "dead_letter",
                lambda: self.top.deadletter_topic.send(
                    key=message.topic.encode(), value=value, headers=headers
                ),
                self.settings.send_retry_s,
                lambda: self.app.should_stop,
            )
        except Exception as exc:
            if self.app.should_stop and transient(exc):
                _leave_for_redelivery(message, exc)
            log.error("dead_letter_failed", reason=reason, topic=message.topic, error=repr(exc))


_MESSAGE_SECONDS = PROCESSING_SECONDS.labels("streams_message")


def _consumed(message: Any) -> dict[str, str | int]:
    return {
        "messaging.destination.name": message.topic,
        "messaging.destination.partition.id": str(message.partition),
        "messaging.kafka.offset": message.offset,
    }


def _leave_for_redelivery(message: Any, exc: Exception) -> NoReturn:
    """Unfinished, not failed (the worker is stopping while Kafka fails): never committed, so
    redelivered after the restart. Faust acknowledges the event in hand whenever its agent
    ends, cancelled or not; one already marked acknowledged is left alone (`Message.ack`)."""
    message.acked = True
    raise asyncio.CancelledError from exc


def _origin(exc: BaseException) -> str:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}" if tb is not None else "?"


def _too_long(events: Sequence[Event]) -> DecodeError | None:
    """Subjects no table keys by: a key that long would make every record about it too large."""
    for event in events:
        if len(event.subject) > ID_CHARS_MAX:
            return DecodeError("limit", f"subject: {len(event.subject)} chars > {ID_CHARS_MAX}")
    return None
