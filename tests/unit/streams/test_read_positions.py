"""A tick is judged no later than the worker has folded its partition's inputs."""

from __future__ import annotations

import pytest

from streams.faust.read_positions import Fetched, ReadPositions, commit_past_markers

NOW = 1_000.0


def offsets(table: dict[str, int | None]) -> object:
    def lookup(topic: str, partition: int) -> int | None:
        if topic not in table:
            raise AssertionError("Partition is not assigned")  # as aiokafka says it
        return table[topic]

    return lookup


def judged(
    reads: ReadPositions,
    end: dict[str, int | None],
    start: dict[str, int | None] | None = None,
    fetched: dict[str, Fetched] | None = None,
) -> float | None:
    return reads.judged_at(
        ["nodes", "gpu"],
        0,
        NOW,
        end=offsets(end),  # type: ignore[arg-type]
        start=offsets(start if start is not None else dict.fromkeys(end, 0)),  # type: ignore[arg-type]
        fetched=lambda topic, _: (fetched or {}).get(topic),
    )


def test_read_to_the_end_the_tick_keeps_its_own_time() -> None:
    reads = ReadPositions()
    reads.folded("nodes", 0, 9, NOW - 50)
    reads.folded("gpu", 0, 4, NOW - 70)
    assert judged(reads, {"nodes": 10, "gpu": 5}) == NOW


def test_behind_the_tick_is_judged_when_the_last_record_folded_was_written() -> None:
    reads = ReadPositions()
    reads.folded("nodes", 0, 9, NOW - 50)  # more is written (end 20): 50 s are unread
    reads.folded("gpu", 0, 4, NOW - 70)  # read to its end
    assert judged(reads, {"nodes": 20, "gpu": 5}) == NOW - 50
    reads.folded("gpu", 0, 4, NOW - 70)
    reads.folded("nodes", 0, 19, NOW - 1)
    assert judged(reads, {"nodes": 20, "gpu": 30}) == NOW - 70  # the one furthest behind


def test_a_record_without_a_time_moves_the_offset_not_the_time() -> None:
    reads = ReadPositions()
    reads.folded("nodes", 0, 9, NOW - 50)
    reads.folded("nodes", 0, 10, -1.0)
    assert judged(reads, {"nodes": 20, "gpu": 0}) == NOW - 50
    assert judged(reads, {"nodes": 11, "gpu": 0}) == NOW


@pytest.mark.parametrize(
    ("end", "start"),
    [
        ({"nodes": None, "gpu": 0}, {"nodes": 0, "gpu": 0}),  # held, not fetched yet
        ({"nodes": 20, "gpu": 0}, {"nodes": 5, "gpu": 0}),  # behind, nothing of it folded
        ({"nodes": 20, "gpu": 0}, {"nodes": None, "gpu": 0}),  # never committed
    ],
)
def test_not_judged_while_how_far_behind_is_unknown(
    end: dict[str, int | None], start: dict[str, int | None]
) -> None:
    assert judged(ReadPositions(), end, start) is None


def test_nothing_new_since_the_committed_offset_is_read_to_its_end() -> None:
    assert judged(ReadPositions(), {"nodes": 7, "gpu": 0}, {"nodes": 7, "gpu": None}) == NOW


def test_a_partition_not_held_here_is_not_waited_for() -> None:
    reads = ReadPositions()
    reads.folded("nodes", 0, 9, NOW - 50)
    assert judged(reads, {"nodes": 10}) == NOW  # gpu's lookups raise: not assigned


def test_a_rebalance_forgets_what_was_folded() -> None:
    reads = ReadPositions()
    reads.folded("nodes", 0, 19, NOW - 1)
    reads.forget()
    assert judged(reads, {"nodes": 20, "gpu": 0}, {"nodes": 12, "gpu": 0}) is None


def test_past_the_last_record_a_transaction_marker_is_nothing_to_fold() -> None:
    """A transactional producer's commit marker takes offset 10: nothing is handed over there."""
    reads = ReadPositions()
    reads.folded("nodes", 0, 9, NOW - 50)
    end = {"nodes": 11, "gpu": 0}
    assert judged(reads, end) == NOW - 50  # by offsets alone it looks one record behind
    assert judged(reads, end, fetched={"nodes": Fetched(9, 11)}) == NOW


def test_an_aborted_transaction_is_nothing_to_fold_either() -> None:
    """Records 10-19 aborted, 20 their marker: the position passed them, none was handed over."""
    reads = ReadPositions()
    reads.folded("nodes", 0, 9, NOW - 50)
    assert judged(reads, {"nodes": 21, "gpu": 0}, fetched={"nodes": Fetched(9, 21)}) == NOW


def test_fetched_to_the_end_a_record_handed_over_and_not_folded_is_still_unread() -> None:
    reads = ReadPositions()
    reads.folded("nodes", 0, 5, NOW - 50)
    end = {"nodes": 11, "gpu": 0}
    assert judged(reads, end, fetched={"nodes": Fetched(9, 11)}) == NOW - 50
    fresh = ReadPositions()
    assert judged(fresh, end, {"nodes": 3, "gpu": 0}, {"nodes": Fetched(9, 11)}) is None


def test_a_position_short_of_the_end_says_more_is_to_come() -> None:
    reads = ReadPositions()
    reads.folded("nodes", 0, 9, NOW - 50)
    assert judged(reads, {"nodes": 20, "gpu": 0}, fetched={"nodes": Fetched(9, 11)}) == NOW - 50


def test_only_markers_since_the_committed_offset_is_read_to_its_end() -> None:
    """Restarted after its last record (committed offset 10, the marker's): nothing to hand
    over, and the position passed the marker."""
    end, start = {"nodes": 11, "gpu": 0}, {"nodes": 10, "gpu": 0}
    assert judged(ReadPositions(), end, start) is None
    assert judged(ReadPositions(), end, start, {"nodes": Fetched(None, 11)}) == NOW


# Heartbeats that XIDs of their partition overtake (streams.faust.lanes).


def test_an_overtaken_record_holds_its_partition_at_its_time_until_folded() -> None:
    """Heartbeats 10-12 queue behind XID 13, which is folded first: the partition is read to its
    end by offsets, but a heartbeat from 40 s ago is not, so nothing is judged past it."""
    reads = ReadPositions()
    reads.folded("nodes", 0, 9, NOW - 45)
    for offset in (10, 11, 12):
        reads.overtaken("nodes", 0, offset, NOW - 50 + offset)
    reads.folded("nodes", 0, 13, NOW - 5)
    end = {"nodes": 14, "gpu": 0}
    assert judged(reads, end) == NOW - 40
    reads.folded("nodes", 0, 10, NOW - 40)
    assert judged(reads, end) == NOW - 39
    reads.folded("nodes", 0, 11, NOW - 39)
    reads.folded("nodes", 0, 12, NOW - 38)
    assert judged(reads, end) == NOW  # every one folded: read to the end, not back at 12


def test_folding_an_overtaken_record_never_moves_its_partition_back() -> None:
    reads = ReadPositions()
    reads.overtaken("nodes", 0, 10, NOW - 40)
    reads.folded("nodes", 0, 11, NOW - 5)
    reads.folded("nodes", 0, 10, NOW - 40)
    assert judged(reads, {"nodes": 20, "gpu": 0}) == NOW - 5  # behind at 11, not at 10


def test_an_overtaken_record_of_unknown_time_holds_its_partition_back() -> None:
    reads = ReadPositions()
    reads.overtaken("nodes", 0, 10, -1.0)
    reads.folded("nodes", 0, 11, NOW - 5)
    assert judged(reads, {"nodes": 12, "gpu": 0}) is None
    reads.folded("nodes", 0, 10, -1.0)
    assert judged(reads, {"nodes": 12, "gpu": 0}) == NOW


def test_a_rebalance_forgets_overtaken_records_too() -> None:
    reads = ReadPositions()
    reads.overtaken("nodes", 0, 10, NOW - 40)
    reads.forget()
    reads.folded("nodes", 0, 11, NOW - 5)
    assert judged(reads, {"nodes": 12, "gpu": 0}) == NOW


# Where a partition is committed past the markers that end its log (commit_past_markers).


def test_committed_up_to_the_last_record_and_markers_after_it_commit_the_position() -> None:
    assert commit_past_markers(Fetched(9, 11), 10, acks_pending=False, read_offset=9) == 11


@pytest.mark.parametrize(
    ("fetched", "committed", "acks_pending"),
    [
        (Fetched(9, 11), 8, False),  # record 9 handed over, not committed yet
        (Fetched(9, 11), 10, True),  # something acked waits for its own commit
        (Fetched(9, 10), 10, False),  # no marker past it: committed where it should be
        (Fetched(9, 11), None, False),  # never committed here (revoked, say)
        (None, 10, False),  # not fetched since the seek
    ],
)
def test_nothing_is_committed_past_a_record_not_committed_itself(
    fetched: Fetched | None, committed: int | None, acks_pending: bool
) -> None:
    assert commit_past_markers(fetched, committed, acks_pending=acks_pending, read_offset=9) is None


def test_nothing_handed_over_since_the_seek_counts_only_while_reading_from_there() -> None:
    """Restarted at the commit marker's offset (10): the position passed it, no record came."""
    assert commit_past_markers(Fetched(None, 11), 10, acks_pending=False, read_offset=10) == 11
    # Read on from somewhere else since: that fetch's "nothing" says nothing about 10.
    assert commit_past_markers(Fetched(None, 11), 10, acks_pending=False, read_offset=12) is None


def test_history_arriving_now_is_judged_at_its_own_time_not_the_clock_s() -> None:
    """A simulated day sent in a minute: its early heartbeats are hours older than the clock;
    judged by the clock, every node was lost while the day was still arriving (issue 40)."""
    reads = ReadPositions()
    reads.folded("nodes", 0, 9, NOW)
    reads.reached("nodes", 0, NOW - 1200, NOW)  # written just now, stamped 20 minutes ago
    assert judged(reads, {"nodes": 10, "gpu": 0}) == NOW - 1200
    reads.reached("nodes", 0, NOW - 300, NOW)  # the day goes on
    reads.reached("gpu", 0, NOW - 900, NOW)  # the input furthest back holds the tick
    assert judged(reads, {"nodes": 10, "gpu": 0}) == NOW - 900


def test_a_fleet_reporting_as_it_goes_is_judged_by_the_clock_silent_or_not() -> None:
    reads = ReadPositions()
    reads.reached("nodes", 0, NOW - 62, NOW - 60)  # fresh when written, nothing since: silent
    assert judged(reads, {"nodes": 0, "gpu": 0}) == NOW - 2  # its 60 s of silence count
    reads.reached("nodes", 0, NOW - 3600, NOW)  # a spooled hour-old event moves nothing back
    assert judged(reads, {"nodes": 0, "gpu": 0}) == NOW - 2
    reads.reached("gpu", 0, NOW - 3600, -1.0)  # a record without a time tells nothing
    reads.forget()
    assert judged(reads, {"nodes": 0, "gpu": 0}) == NOW
