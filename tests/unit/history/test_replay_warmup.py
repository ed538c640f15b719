"""Replay's warm-up (state at the range start) and the Kafka offset-range syntax."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from schemas.events import JobExited, QuarantineNodes
from streams.analysis.replay.kafka_source import OffsetRange
from streams.analysis.replay.rerun import current_brain, default_warmup_s, rerun
from streams.analysis.replay.source import split
from streams.settings import StreamsSettings

HOUR = datetime(2026, 3, 1, 12, tzinfo=UTC)


def failures(n: int = 5) -> list[JobExited]:
    """A job failing `n` times on the same two nodes within one hour window."""
    return [
        JobExited(
            source="test",
            cluster="test",
            subject="slurm/test/9",
            occurred_at=HOUR + timedelta(minutes=5 + 5 * i),
            payload={"state": "FAILED", "exit_code": 1, "attempt": i, "nodes": ["n1", "n2"]},
        )
        for i in range(1, n + 1)
    ]


def test_a_window_straddling_the_start_is_decided_as_live_only_with_warmup() -> None:
    events = failures()
    start = events[4].occurred_at - timedelta(minutes=2)  # 4 failures before, the 5th inside
    warmup, inputs = split(events, start)
    assert len(warmup) == 4 and inputs == [events[4]]

    warm = rerun([*warmup, *inputs], current_brain(), 5.0, start=start)
    cold = rerun(inputs, current_brain(), 5.0, start=start)
    live = rerun(events, current_brain(), 5.0)

    assert any(isinstance(t, QuarantineNodes) for t in warm)
    assert not cold
    # Exactly the live decisions from the start on; the warm-up's own restarts are dropped.
    assert [t.event_id for t in warm] == [t.event_id for t in live if t.occurred_at >= start]
    assert len(live) > len(warm)


def test_default_warmup_is_the_longest_duration_in_the_loaded_rules() -> None:
    assert default_warmup_s() == 7200.0  # slow_node's leave_s
    wider = StreamsSettings(
        rule_config={"repeated_failures_on_node_set": {"window": {"window_s": 10800}}}
    )
    assert default_warmup_s(wider) == 10800.0
    others = [b.spec.name for b in current_brain().engine.rules]
    only_restarts = StreamsSettings(
        rule_config={n: {"enabled": False} for n in others if n != "restart_incomplete_exit"}
    )
    assert default_warmup_s(only_restarts) == 0.0  # restarts count attempts, not time


def test_offset_range_parsing() -> None:
    assert OffsetRange.parse("jobs:2:10-20") == OffsetRange("jobs", 2, 10, 20)
    assert str(OffsetRange.parse("gpu:0:0-1")) == "gpu:0:0-1"
    for bad, why in (
        ("jobs:0:5-5", "exclusive"),
        ("jobs:0:5", "TOPIC:PARTITION:START-END"),
        ("nope:0:0-5", "not in the topic catalog"),
        ("deadletter:0:0-5", "does not carry events"),
    ):
        with pytest.raises(ValueError, match=why):
            OffsetRange.parse(bad)
