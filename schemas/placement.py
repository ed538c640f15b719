"""Where a message must be: the catalog topic of its events' type, the partition of its key.

Producers in other languages may pick another partitioner (librdkafka's default is CRC32, not
Java's murmur2), another key, or the wrong topic. Folding such a message would update a table
shard that does not own the subject, so the streams worker checks this and dead-letters what is
misplaced, counted by reason, never folding it. The history sink and replay check alike: history
holds what the control plane folded, and replay decides on nothing the live worker refused.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from aiokafka.partitioner import murmur2

from schemas.codec import DecodeError
from schemas.envelope import Event

# The catalog topics whose events are folded into per-key state.
PLACED = ("jobs", "nodes", "gpu")


@dataclass(frozen=True)
class Placement:
    """The placed topics a reader reads: Kafka name → (catalog name, partitions or None)."""

    topics: Mapping[str, tuple[str, int | None]]

    @classmethod
    def of(
        cls, kafka_name: Callable[[str], str], partitions: Callable[[str], int | None]
    ) -> Placement:
        """From the catalog names' Kafka names and the partition count of each Kafka topic."""
        names = {kafka_name(name): name for name in PLACED}
        return cls({topic: (name, partitions(topic)) for topic, name in names.items()})

    def check(
        self, events: Sequence[Event], *, topic: str, key: bytes | None, partition: int
    ) -> DecodeError | None:
        """`misplaced` for a message read from the Kafka topic `topic`, if it is placed."""
        placed = self.topics.get(topic)
        if placed is None:
            return None
        name, partitions = placed
        return misplaced(events, topic=name, key=key, partition=partition, partitions=partitions)


@functools.lru_cache(maxsize=1 << 16)
def partition_for(key: bytes, partitions: int) -> int:
    """Kafka's default partitioner (Java's murmur2), as the Emitter and aiokafka use it.
    Remembered for the last 65,536 keys: aiokafka's murmur2 is Python (1.6 µs a key, 56 ns
    remembered), asked for every record the streams worker reads and every entity it folds,
    of a fleet's few names."""
    return int(murmur2(key) & 0x7FFFFFFF) % partitions


def misplaced(
    events: Sequence[Event],
    *,
    topic: str,
    key: bytes | None,
    partition: int | None = None,
    partitions: int | None = None,
) -> DecodeError | None:
    """Why these events (one decoded message) must not be folded where they were read, or None.

    `topic` is the catalog name (`jobs`, `nodes`, ...), not the prefixed Kafka name. Pass
    `partition` and `partitions` where state is sharded by partition.
    """
    subjects = {e.subject for e in events}
    if len(subjects) > 1:
        return DecodeError("mixed-subjects", f"one message carries {len(subjects)} subjects")
    wrong = sorted({e.type for e in events if e.topic != topic})
    if wrong:
        return DecodeError("wrong-topic", f"{', '.join(wrong)} belong(s) elsewhere, not on {topic}")
    subject = next(iter(subjects)).encode() if subjects else b""
    if key != subject:
        shown = key[:64].decode(errors="replace") if key is not None else None
        return DecodeError("wrong-key", f"key {shown!r} is not the subject")
    if partition is not None and partitions:
        want = partition_for(subject, partitions)
        if want != partition:
            return DecodeError(
                "wrong-partition",
                f"key belongs on partition {want} of {partitions} (murmur2), read from {partition}",
            )
    return None
