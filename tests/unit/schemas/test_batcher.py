"""The Emitter's batcher: a batch put back after a failed send goes out first, whole."""

from __future__ import annotations

from schemas.codec import decode
from schemas.events import GpuSampled
from schemas.runtime.emitter.batcher import Batcher, PendingBatch
from streams.testing import envelope


def sample(node: str, gpu: int) -> GpuSampled:
    return GpuSampled(**envelope(node), payload={"gpu": gpu})


def test_a_restored_batch_goes_first_and_keeps_events_added_meanwhile() -> None:
    batcher = Batcher(max_events=100, max_bytes=1 << 20)
    first = [sample("n1", 0), sample("n1", 1)]
    for e in first:
        batcher.add("gpu", e)
    batcher.add("gpu", sample("n2", 0))
    taken = batcher.pop()
    assert taken is not None and taken.key == b"n1"
    later = sample("n1", 2)
    batcher.add("gpu", later)  # a new open batch for n1 while the first one was being sent
    batcher.restore(taken)
    again = batcher.pop()
    assert again is not None and again.key == b"n1"
    assert [e.event_id for e in decode(again.value())] == [
        *(e.event_id for e in first),
        later.event_id,
    ]
    assert len(batcher) == 1  # n2's batch is still there
    fresh = PendingBatch("gpu", b"n1")
    for e in [*first, later]:
        fresh.add(e)
    assert again.size_bytes == fresh.size_bytes  # the size bound still counts every event
