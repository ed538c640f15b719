"""Subjects chosen to share a partition, as a test needs them in one partition's order."""

from __future__ import annotations

import itertools

from schemas.placement import partition_for
from schemas.topics import partition_count


def crowd_on_partition_of(subject: str, name: str, count: int, topic: str = "nodes") -> list[str]:
    """The first `count` subjects named `name-<n>` that murmur2 puts on `subject`'s partition of
    `topic`."""
    partitions = partition_count(topic)
    mine = partition_for(subject.encode(), partitions)
    names = (f"{name}-{i}" for i in itertools.count())
    placed = (other for other in names if partition_for(other.encode(), partitions) == mine)
    return list(itertools.islice(placed, count))


def on_partition_of(subject: str, name: str, topic: str = "nodes") -> str:
    """One subject named `name-<n>` on `subject`'s partition of `topic`."""
    return crowd_on_partition_of(subject, name, 1, topic)[0]
