"""Replay's pure parts: deterministic re-decision, the then/now comparison, time parsing."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
import typer

from centrality.bench.history_data import incident
from centrality.history_cli import parse_time
from schemas.events import RestartJob, Trigger
from streams.analysis.replay.rerun import (
    PROGRESS_EVERY,
    compare,
    current_brain,
    rerun,
    rerun_stream,
)
from streams.testing import checkpoint
from tests.factories import exited

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def test_rerun_is_deterministic_whatever_the_input_order() -> None:
    events = incident(NOW)
    shuffled = list(events)
    random.Random(1).shuffle(shuffled)
    first = rerun(events, current_brain(), 5.0)
    again = rerun(shuffled, current_brain(), 5.0)

    def dump(triggers: list[Trigger]) -> list[dict[str, object]]:
        return [t.model_dump(exclude={"observed_at"}) for t in triggers]

    assert first and dump(first) == dump(again)


def test_a_stream_is_read_once_and_must_come_in_order() -> None:
    events = incident(NOW)
    streamed = rerun_stream(iter(events), current_brain(), 5.0)
    assert [t.event_id for t in streamed] == [
        t.event_id for t in rerun(events, current_brain(), 5.0)
    ]
    late = [*events, events[0].model_copy(update={"occurred_at": NOW - timedelta(hours=2)})]
    with pytest.raises(ValueError, match="out of order"):
        rerun_stream(iter(late), current_brain(), 5.0)


def test_compare_matches_by_trigger_id() -> None:
    events = [checkpoint(100, at_s=0), exited("FAILED", attempt=1, at_s=10)]
    events += [exited("FAILED", attempt=2, at_s=20)]
    now = rerun(events, current_brain(), 5.0)
    restarts = [t for t in now if isinstance(t, RestartJob)]
    assert len(restarts) == 2
    first, second = restarts
    changed = second.model_copy(
        update={"payload": second.payload.model_copy(update={"reason": "other"})}
    )
    gone: Trigger = RestartJob.decide(
        cause=events[0],
        source="rule/old",
        rule="old_rule",
        window="w",
        reason="an older rule",
        checkpoint_uri=None,
        attempt=1,
    )
    decisions = {d.trigger_id: d.status for d in compare(now, [first, changed, gone])}
    assert decisions[str(first.event_id)] == "same"
    assert decisions[str(second.event_id)] == "changed"
    assert decisions[str(gone.event_id)] == "missing"
    assert set(decisions.values()) <= {"same", "changed", "missing", "new"}
    assert [d.status for d in compare(now, [])] == ["new"] * len(now)


def test_parse_time() -> None:
    assert parse_time("now", NOW) == NOW
    assert parse_time("90m", NOW) == NOW - timedelta(minutes=90)
    assert parse_time("2d", NOW) == NOW - timedelta(days=2)
    assert parse_time("2026-03-01T10:00:00", NOW) == datetime(2026, 3, 1, 10, tzinfo=UTC)


def test_parse_time_refuses_what_is_not_a_time_saying_what_is() -> None:
    with pytest.raises(typer.BadParameter, match=r"'yesterday' is not a time.*30m, 2h, 7d"):
        parse_time("yesterday", NOW)


def test_rerun_reports_progress_without_changing_what_it_decides() -> None:
    events = incident(NOW)
    heard: list[int] = []
    with_progress = rerun(events, current_brain(), 5.0, on_progress=heard.append)
    assert heard == list(range(0, len(events), PROGRESS_EVERY))
    assert [t.event_id for t in with_progress] == [
        t.event_id for t in rerun(events, current_brain(), 5.0)
    ]
