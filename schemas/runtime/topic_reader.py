"""Reading a whole topic, then what was written since: what a compacted topic every reader needs
in full is read with (the action ledger, silences, the fleet's status).

Without a consumer group the reader is assigned every partition. Each read goes up to the end
offsets of the moment it starts, so it ends even while others keep writing.

Between reads the consumer is paused, and it long-polls for `_FETCH_WAIT_MS` at most. A broker
answers one connection's requests in order, so the end offsets asked for at a read's start
waited behind the idle consumer's fetch, held open for aiokafka's default 0.5 s: every refresh
of the ledger (before each breaker refusal) or of the silences (before each rule's decision
acted on) cost half a second with nothing new to read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from schemas.runtime import kafka_clients
from schemas.runtime.settings import KafkaSettings

Records = Sequence[Any]  # aiokafka ConsumerRecords of one fetch
_FETCH_WAIT_MS = 10


class MissingTopicError(RuntimeError):
    """The topic does not exist: the catalog was not created (`centrality up`)."""


class TopicReader:
    def __init__(
        self,
        kafka: KafkaSettings,
        topic: str,
        apply: Callable[[Records], None],
        *,
        client_id: str,
        timeout_s: float = 30.0,
        on_read: Callable[[int], None] = lambda count: None,
    ) -> None:
        self.kafka = kafka
        self.topic = topic
        self.apply = apply
        self.on_read = on_read  # after every read that ended well, loads and refreshes alike
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._read_up_to: dict[TopicPartition, int] = {}  # offsets read so far, per partition
        # One consumer for every read: a consumer per read costs a connection and a metadata
        # round trip, and reads come in bursts. Reads take turns; see `refresh`.
        self._consumer: AIOKafkaConsumer | None = None
        self._reading = asyncio.Lock()
        self._reads_started = 0
        self._reads_done = 0  # the number of the last read that ended well

    async def load(self, *, since_last: bool = False) -> int:
        """Read the topic up to its current end (`since_last`: from where the last read ended);
        the number of records read."""
        async with self._reading:
            return await self._load(since_last=since_last)

    async def refresh(self) -> None:
        """Read what was written since the last read. Callers that ask while a read is under way
        share the next one: any read that started after a caller asked will do for it, so a
        storm of callers costs a few reads, not one each."""
        asked = self._reads_started
        async with self._reading:
            if self._reads_done > asked:
                return
            await self._load(since_last=True)

    async def stop(self) -> None:
        async with self._reading:
            if self._consumer is not None:
                await kafka_clients.stop(self._consumer)
                self._consumer = None

    async def _load(self, *, since_last: bool) -> int:
        self._reads_started += 1
        number = self._reads_started
        consumer = await self._started()
        try:
            partitions = list(consumer.assignment())
            if not partitions:
                raise MissingTopicError(f"topic {self.topic} is missing; run `centrality up`")
            ends = await consumer.end_offsets(partitions)
            starts = dict(self._read_up_to) if since_last else {}
            unread = [tp for tp in partitions if not starts.get(tp)]
            if unread:  # `seek_to_beginning` would wait for a fetch in flight
                starts |= await consumer.beginning_offsets(unread)
            for tp in partitions:
                consumer.seek(tp, starts[tp])
            consumer.resume(*partitions)
            try:
                count = await asyncio.wait_for(self._read_to(consumer, ends), self.timeout_s)
            finally:
                consumer.pause(*partitions)
        except BaseException:
            # A consumer in an unknown state (a timeout mid-fetch, the broker away) is not reused.
            self._consumer = None
            await kafka_clients.stop(consumer)
            raise
        self._read_up_to.update(ends)
        self._reads_done = number
        self.on_read(count)
        return count

    async def _started(self) -> AIOKafkaConsumer:
        if self._consumer is None:
            consumer = kafka_clients.consumer(
                self.kafka,
                self.topic,
                client_id=self.client_id,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                fetch_max_wait_ms=_FETCH_WAIT_MS,
            )
            try:
                await consumer.start()
                consumer.pause(*consumer.assignment())
            except BaseException:
                await kafka_clients.stop(consumer)
                raise
            self._consumer = consumer
        return self._consumer

    async def _read_to(self, consumer: AIOKafkaConsumer, ends: dict[TopicPartition, int]) -> int:
        count = 0
        pending = {tp for tp, end in ends.items() if await consumer.position(tp) < end}
        while pending:
            fetched = await consumer.getmany(*pending, timeout_ms=500)
            for records in fetched.values():
                self.apply(records)
                count += len(records)
            for tp in list(pending):
                if await consumer.position(tp) >= ends[tp]:
                    pending.discard(tp)
        return count
