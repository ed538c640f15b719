"""Subjects chosen to share a partition, as a test needs them in one partition's order."""

from __future__ import annotations

from schemas.placement import partition_for
from schemas.topics import partition_count


def on_partition_of(subject: str, name: str, topic: str = "nodes") -> str:
    """A subject named `name-<n>` that murmur2 puts on `subject`'s partition of `topic`."""
    partitions = partition_count(topic)
    mine = partition_for(subject.encode(), partitions)
    return next(
        other
        for other in (f"{name}-{i}" for i in range(1000))
        if partition_for(other.encode(), partitions) == mine
    )


def crowd_on_partition_of(subject: str, name: str, count: int, topic: str = "nodes") -> list[str]:
    """`count` subjects named `name-<n>` that murmur2 puts on `subject`'s partition of `topic`."""
    partitions = partition_count(topic)
    mine = partition_for(subject.encode(), partitions)
    names = (f"{name}-{i}" for i in range(count * partitions * 4))
    crowd = [other for other in names if partition_for(other.encode(), partitions) == mine]
    assert len(crowd) >= count, f"only {len(crowd)} of {count} names on the partition"
    return crowd[:count]
