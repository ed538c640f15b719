"""Faust's aiokafka transport with small, documented fixes. Select it with the broker URL
scheme `centrality-kafka://host:port` (see `install`).

1. Fetch wait. faust-streaming 0.15 hard-codes `fetch_max_wait_ms=1500` in its worker consumer,
   with no setting: on a quiet partition every message can wait up to 1.5 s before Faust sees it.
   Our consumer waits at most `FETCH_MAX_WAIT_MS` (`CENTRALITY_STREAMS_FETCH_MAX_WAIT_MS`).

2. Flush before commit. Table changelog records first go to Faust's own producer buffer. Before
   committing offsets Faust flushes the producer, but its buffer flush gives up after 0.1 s
   without progress even if records are still waiting; offsets can then be committed ahead of
   the changelog, and a worker killed at that moment loses table state for good. Our producer's
   flush drains that buffer of every record put before the flush began, before flushing
   aiokafka, including the record the buffer's sender has taken off its queue but not yet
   handed to aiokafka (that hand-over awaits, e.g. for room in a full aiokafka batch; a flush
   that looked only at the queue committed offsets past that record). Records put meanwhile
   belong to messages after the offsets being committed: waiting for them too (for an empty
   buffer) held a commit for as long as the table changes outpaced the sender. First of all, the
   flush makes the table writes still waiting for their forwards and statuses (`App.writes`,
   `streams.faust.write_behind`): their changelog records belong to the offsets being committed too.

3. A sender that survives transient errors. The buffer's one sender task ends at the first
   failed send (a broker hiccup while the worker rejoins after a restart, say), and from then on
   every table change stays in the buffer and never reaches the changelog, while direct sends
   still work. Ours retries a transiently failed record with jittered backoff (tenacity), so
   order holds. A deterministic failure (a record over the message limit) is never retried: it
   wedged the worker once, retrying a 1 MB value every 5 s. Such a record, or one still failing
   when the worker stops, is dropped with an error, and the local stores are marked untrusted
   (`streams.faust.clean_start.distrust`), so the next start restores them from the changelog and no
   worker holds a state the changelog lacks. (The app keeps values far below the limit:
   `streams.state.bounds`.)

4. Seek with the fetcher held still. After a rebalance Faust resumes the stream partitions and
   then seeks them back to their committed offsets while its fetcher is running. Records fetched
   before the seek keep flowing after it, and Faust's read-offset bookkeeping takes the ones it
   delivered meanwhile for a gap in the partition: it commits past them as if processed, before
   they are (a worker killed then loses them), and records fetched again are dropped as already
   read. Seen as jobs, forwards and node updates missing after a `kill -9` and restart. Our
   consumer stops the flow, waits until the fetcher has let go of the record in hand, and
   seeks: records delivered before the seek are delivered once more after it, which the folds
   absorb (redelivered events change nothing). It leaves the flow stopped. Faust's recovery
   resumes it right after the seek, once it has cleared the stream queues; resumed by the seek
   itself (as this fix first did), the fetcher delivered records into the queues in between,
   the clearing dropped them after their read offsets had moved on, and they were never
   processed: a restarted worker skipped a job's start and checkpoint and folded its exit on an
   empty state (the CI failure of stop 20), and a later commit could go past them.

5. Drain before stopping. On a clean stop Faust stops the aiokafka producer first and the
   buffer after it, so table changes still in the buffer were dropped (their offsets may be
   committed by then): the last moments before every SIGTERM were lost from the changelog. Our
   producer drains the buffer while it can still send.

6. Hand-over without tasks. The consumer's drain loop delivers each fetched message through
   `wait_first(callback(message), suspend_flow.wait())`, which makes four tasks per message and
   cancels three: the largest per-message cost of the worker (about 4x its rate when removed).
   Our consumer runs the callback's first step inline (`streams.faust.eager`); the callback nearly
   always completes there (the event goes onto a stream's queue). One that must wait (a full
   queue, flow stopped for a rebalance) continues in a task raced against `suspend_flow`,
   exactly as before, so a rebalance still interrupts it.

7. Seek back even where nothing was committed yet. Whenever its flow stops (every rebalance,
   and each seek of fix 4) Faust drops the batch it had just fetched, whose records aiokafka
   already counts as consumed, and relies on the seek back to the committed offsets to fetch
   them again. aiokafka's `seek_to_committed` skips a partition with no committed offset (or
   offset 0), so such a partition stayed past the dropped records for good. A worker that
   stalled past its session timeout, or was rebalanced again soon after starting, went on
   from the end of every partition it had not committed yet; the records in between were never
   processed, and later commits went past them. Seen as jobs missing from the tables (traced
   record by record). Our seek puts those partitions where a new consumer starts: the earliest
   offset.

8. Unreadable batches. A fetched record batch that cannot be unpacked (codec, corruption) raised
   out of every fetch of its partition, crashing the worker at the same offset on every restart.
   `streams.faust.batches` turns it into one marked record that the app dead-letters; see there.

9. Bounded stop. Stopping flushes the changelog buffer for at most `STOP_FLUSH_S`; whatever is
   still unsent then is dropped as in fix 3. `centrality streams` also kills a worker still
   running 8 s after SIGTERM/SIGINT (`CENTRALITY_STREAMS_STOP_TIMEOUT_S`): offsets are only
   committed for what was finished, and an unclean stop restores the stores from the changelog.

10. Sends without giving up the loop. Every send (each changelog record, trigger and forward)
   first asks `App.maybe_start_producer`, a mode `stampede` that yields the event loop three
   times even when the producer has long been started. The changelog buffer's one sender thus
   handed aiokafka one record per few loop turns, each turn shared with the agents folding
   messages (~1 ms each): ~540 records/s at 4,000 nodes, while Faust's conductor stops
   delivering records whenever more than 100 wait (`wait_until_ebb`), 36 s of a 120 s run.
   Our app (`App`) answers at once when the producer is running, so the sender hands over
   whatever is pending in one turn.

11. Changelog records the broker refuses. A record handed to aiokafka can still fail: the broker
   refuses it (over the changelog topic's `max.message.bytes`, say) or its batch times out.
   Faust only logs a warning, and the next commit goes past the message whose state it
   carried: a restart restores the table without it, for good. Our buffer looks at the outcome
   of every record it handed over (Faust sets it on the record's future); one that failed is
   logged, marks the local stores untrusted, and makes the flush before the next commit (or a
   rebalance, or a stop) raise, which stops the worker before any commit past it. Its successor
   restores the tables from the changelog and re-decides from the last commit.

12. Transactions. Faust reads uncommitted records unless it runs transactions itself, so a
   foreign transactional producer's aborted records (Flink or Kafka Streams exactly-once, a
   librdkafka `transactional.id`) were folded as if they had happened. Our consumer reads
   committed records only, as every other consumer of ours does
   (`schemas.runtime.kafka_clients`), and keeps, per partition, where its last fetch left it
   (`fetched`): transaction markers and aborted records take offsets and are never handed over,
   so only the fetch position tells a tick that such a partition is read to its end
   (`streams.faust.read_positions`). Faust commits the last record's offset + 1, so a partition
   whose log ends in a marker kept a lag of one for good; ours commits the fetch position there
   once every record before it is committed.

13. Outages. In a whole-cluster Kafka outage the changelog sender's retries (fix 3) and aiokafka's
   batch lifetime counted down as if one partition were in trouble: after `send_retry_s` a
   record was dropped, after a quarter of it a record in flight failed and stopped the worker
   (fix 11). Neither runs while the cluster is away (`schemas.runtime.outages`): the sender
   waits, and aiokafka's batches do not expire (`streams.faust.batch_lifetime`), so a worker
   rides the outage out and sends everything once the broker is back.

All Faust workarounds, these and the others, are listed in streams/faust/README.md beside this
file; the private names they rely on are checked at start-up by `streams.faust.canary`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from functools import cached_property
from typing import Any

import faust
import structlog
from faust.transport import drivers
from faust.transport.drivers import aiokafka as driver
from faust.transport.producer import ProducerBuffer
from mode import Service
from mode.services import WaitResults

from streams.faust import batch_lifetime, batches, clean_start, eager
from streams.faust import canary as faust_canary
from streams.faust.commit import committable, flush_before_commit
from streams.faust.failures import call_retrying
from streams.faust.read_positions import Fetched, commit_past_markers
from streams.faust.write_behind import WriteBehind

log = structlog.get_logger("streams")

SCHEME = "centrality-kafka"
FETCH_MAX_WAIT_MS = 20
_LET_GO_TIMEOUT_S = 5.0
STOP_FLUSH_S = 4.0
# Retries of a changelog record (fix 3), as long as the app's sends (`send_retry_s`); the time the
# whole cluster is away does not count (fix 13).
CHANGELOG_RETRY_S = 60.0


class _ConsumerThread(driver.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # aiokafka keeps the value and hands it to its Fetcher in start(), which comes later.
        consumer._fetch_max_wait_ms = FETCH_MAX_WAIT_MS
        consumer._isolation_level = "read_committed"  # fix 12; also read in start()
        return consumer


class _Consumer(driver.Consumer):
    def _new_consumer_thread(self) -> driver.AIOKafkaConsumerThread:
        return _ConsumerThread(self, loop=self.loop, beacon=self.beacon)

    @cached_property
    def _hand_free(self) -> asyncio.Event:
        """Clear while Faust's fetcher holds a record of ours and has not asked for the next."""
        free = asyncio.Event()
        free.set()
        return free

    @cached_property
    def _fetches(self) -> dict[Any, Fetched]:
        return {}

    def fetched(self, tp: Any) -> Fetched | None:
        """Where the last fetch left `tp` (None: not fetched since the last seek)."""
        return self._fetches.get(tp)

    async def _wait_next_records(self, timeout: float) -> tuple[Any, Any]:  # noqa: ASYNC109  # Faust's signature
        records, active = await super()._wait_next_records(timeout)
        if records is not None:
            self._note_fetches(records)
        return records, active

    def _note_fetches(self, records: Mapping[Any, list[Any]]) -> None:
        """Every held partition's position with the last record handed over, taken together
        here: a position read later may be past records this fetch has not handed over yet."""
        try:
            assignment = self._thread._ensure_consumer()._subscription.subscription.assignment
            positions = {
                tp: state.position
                for tp in assignment.tps
                if (state := assignment.state_value(tp)).has_valid_position
            }
        except Exception:  # no assignment (between rebalances): nothing is known
            positions = {}
        noted = {}
        for tp, position in positions.items():
            handed = records.get(tp)
            last = handed[-1].offset if handed else self._last_handed(tp)
            noted[tp] = Fetched(last, position)
        self._fetches.clear()  # partitions no longer held are forgotten
        self._fetches.update(noted)

    def _last_handed(self, tp: Any) -> int | None:
        kept = self._fetches.get(tp)
        return None if kept is None else kept.last_offset

    def _filter_tps_with_pending_acks(self, topics: Any = None) -> Iterator[Any]:
        pending = list(super()._filter_tps_with_pending_acks(topics))
        # A partition whose log ends in markers has nothing to ack, and an offset to commit.
        pending += [
            tp
            for tp in self._fetches
            if tp not in pending
            and (topics is None or tp in topics or tp.topic in topics)
            and self._past_the_last_record(tp) is not None
        ]
        return iter(pending)

    def _filter_committable_offsets(self, tps: Iterable[Any]) -> dict[Any, int]:
        tps = list(tps)  # the commit's step 2 (`streams.faust.commit`)
        acked = super()._filter_committable_offsets(tps)
        return committable(acked, tps, self._past_the_last_record)

    def _past_the_last_record(self, tp: Any) -> int | None:
        """`read_positions.commit_past_markers` for `tp` (never a changelog: not committed)."""
        if self._is_changelog_tp(tp):
            return None
        return commit_past_markers(
            self._fetches.get(tp),
            self._committed_offset.get(tp),
            acks_pending=bool(self._acked.get(tp)),
            read_offset=self._read_offset.get(tp),
        )

    async def getmany(self, timeout: float) -> AsyncIterator[tuple[Any, Any]]:  # noqa: ASYNC109  # Faust's signature
        async for tp, message in super().getmany(timeout):
            self._hand_free.clear()
            try:
                yield tp, message
            finally:
                # Back here only once the fetcher delivered it and recorded its read offset.
                self._hand_free.set()

    async def perform_seek(self) -> None:
        """Seek with the fetcher held still, and leave the flow stopped: Faust's recovery
        resumes it once it has cleared the stream queues (`flow_control.resume()`)."""
        self.stop_flow()  # the fetcher stops at its next record and waits for the flow
        try:  # milliseconds normally; bounded in case the fetcher was torn down holding one
            await asyncio.wait_for(self._hand_free.wait(), _LET_GO_TIMEOUT_S)
        except TimeoutError:
            log.warning("seek_without_fetcher_letting_go", waited_s=_LET_GO_TIMEOUT_S)
        await super().perform_seek()

    async def seek_to_committed(self) -> Mapping[Any, int]:
        committed = await super().seek_to_committed()
        # Changelogs are never committed: table recovery positions them.
        unset = [
            tp for tp, offset in committed.items() if not offset and not self._is_changelog_tp(tp)
        ]
        for tp in unset:
            if committed[tp] == 0:  # committed, but aiokafka seeks only to offsets above 0
                self._thread.seek(tp, 0)
        never = [tp for tp in unset if committed[tp] is None]
        if never:  # where a new consumer starts; the app reads from the earliest offset
            await self._thread.seek_to_beginning(*never)
        # Fetches noted before the positions moved back say nothing of what is handed over
        # since (cleared earlier, one noted meanwhile could say "nothing", wrongly).
        self._fetches.clear()
        return committed

    async def wait_first(
        self,
        *coros: Any,
        timeout: Any = None,  # noqa: ASYNC109  # mode's signature, overridden
    ) -> WaitResults:
        # The drain loop hands every message over as `wait_first(callback(message),
        # suspend_flow.wait())`: four tasks and a dozen loop callbacks per message, though the
        # callback almost never waits (it puts the event on a stream's queue). Run its first
        # step inline; only a callback that does wait (full queue, flow stopped) races the
        # other waits in tasks, as before.
        drain_call = len(coros) == 2 and timeout is None and asyncio.iscoroutine(coros[0])
        if not drain_call or self._stopped.is_set() or self._crashed.is_set():
            return await super().wait_first(*coros, timeout=timeout)
        try:
            started = eager.start(coros[0])
        except BaseException:
            _close(coros[1])
            raise
        if isinstance(started, eager.Finished):
            _close(coros[1])
            return WaitResults([coros[0]], [started.value], False)
        return await super().wait_first(started, coros[1])


def _topic(message: Any) -> str | None:
    channel = getattr(getattr(message, "message", None), "channel", None)
    return channel.get_topic_name() if isinstance(channel, faust.Topic) else None


def _close(waitable: Any) -> None:
    if asyncio.iscoroutine(waitable):
        waitable.close()  # never awaited: no "coroutine was never awaited" warning


class _Buffer(ProducerBuffer):
    def __post_init__(self) -> None:
        super().__post_init__()
        self.put_total = 0
        self.sent_total = 0  # handed to aiokafka, or dropped for good (fix 3)
        self.undelivered: BaseException | None = None  # fix 11: the first record refused
        self.handed: deque[Any] = deque()  # handed to aiokafka, outcome not looked at yet

    def put(self, fut: Any) -> None:
        super().put(fut)
        self.put_total += 1

    @property
    def size(self) -> int:
        """Records waiting to be handed to aiokafka, as Faust's own says without a threaded
        producer (never ours), which it looks up in the app's settings at each call: twice a
        record read (`wait_until_ebb`), ~1 % of the worker."""
        return self.pending.qsize()

    @Service.task
    async def _handle_pending(self) -> None:
        while not self.should_stop:
            message = await self.pending.get()
            try:
                await self._send_with_retry(message)
                self.sent_total += 1  # not when cancelled: that record was not handed over
            finally:
                self.message_sent.set()

    async def _send_with_retry(self, message: Any) -> None:
        try:
            await call_retrying(
                "changelog_send",
                lambda: self._send_pending(message),
                CHANGELOG_RETRY_S,
                lambda: self.should_stop,
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("changelog_record_dropped", error=repr(exc), topic=_topic(message))
            clean_start.distrust()
            return
        self.handed.append(message)  # Faust answers it (result or exception) once delivered
        self.refused()  # those answered meanwhile: the queue stays as long as what is in flight

    def refused(self) -> BaseException | None:
        """The first record handed over and then refused (fix 11). Outcomes are looked at in
        order, up to the first record still in flight; after aiokafka's flush (ours, before a
        commit) every record handed over before it has one."""
        handed = self.handed
        while handed and handed[0].done():
            message = handed.popleft()
            exc = asyncio.CancelledError() if message.cancelled() else message.exception()
            if exc is not None and self.undelivered is None:  # the rest would only repeat it
                log.error("changelog_delivery_failed", error=repr(exc), topic=_topic(message))
                clean_start.distrust()
                self.undelivered = exc
        return self.undelivered

    async def drain(self) -> None:
        """Until every record put before this call is in aiokafka's hands (its flush covers the
        rest). Not those put meanwhile: a commit chooses its offsets before it flushes, and
        while table changes outpace the sender the buffer is never empty."""
        target = self.put_total
        while self.sent_total < target:
            if self.should_stop:
                unsent = target - self.sent_total
                raise RuntimeError(f"changelog buffer stopped with {unsent} records unsent")
            self.message_sent.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.message_sent.wait(), timeout=1.0)


class _Producer(driver.Producer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        buffer = _Buffer(loop=self.loop, beacon=self.beacon)
        buffer.app, buffer.threaded_producer = self.app, self.threaded_producer
        self.buffer = self.ordered_buffer = buffer

    async def on_stop(self) -> None:
        try:
            await asyncio.wait_for(self.flush(), STOP_FLUSH_S)
        except Exception as exc:  # TimeoutError included: stopping must not wait for a broker
            log.error("changelog_unflushed_at_stop", error=repr(exc))
            clean_start.distrust()
        await super().on_stop()

    async def flush(self) -> None:
        """The commit's step 3 (`streams.faust.commit`): fixes 2 and 11."""
        await flush_before_commit(
            getattr(self.app, "writes", None), self.ordered_buffer, super().flush
        )


class App(faust.App):
    """The streams app's base: fix 10; `writes` (`streams.faust.write_behind`), set by the app, is
    settled by every flush (fix 2)."""

    writes: WriteBehind | None = None

    async def maybe_start_producer(self) -> Any:
        producer = self.producer
        if producer.started and not self.in_transaction:
            return producer
        return await super().maybe_start_producer()


class Transport(driver.Transport):
    Consumer = _Consumer
    Producer = _Producer


def consumer_of(app: faust.App) -> _Consumer:
    """The app's consumer: ours wherever the app's broker is `SCHEME` (see `install`)."""
    consumer = app.consumer
    assert isinstance(consumer, _Consumer), type(consumer)
    return consumer


def install(fetch_max_wait_ms: int, changelog_retry_s: float = CHANGELOG_RETRY_S) -> str:
    """Register the transport; returns the URL scheme to use in `broker=`."""
    global FETCH_MAX_WAIT_MS, CHANGELOG_RETRY_S
    faust_canary.require()
    FETCH_MAX_WAIT_MS, CHANGELOG_RETRY_S = fetch_max_wait_ms, changelog_retry_s
    batches.install()
    batch_lifetime.install()
    drivers.TRANSPORTS.aliases[SCHEME] = f"{__name__}:Transport"
    return SCHEME
