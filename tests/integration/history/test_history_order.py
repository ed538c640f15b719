"""History read back in pages comes in `event_time_key` order, which ClickHouse now sorts: at one
instant facts, then decisions, then action results, then by id; no page loses or repeats one."""

from __future__ import annotations

from datetime import timedelta

import pytest

from centrality.bench.history_data import insert_events, results_of
from schemas.envelope import Event
from schemas.events import NodeHeartbeat, Trigger
from streams.history.client import connect
from streams.history.query import event_time_key, stream_events_between
from streams.history.settings import ClickHouseSettings
from tests.integration.history.conftest import Seeded

pytestmark = pytest.mark.integration


def test_pages_come_in_event_time_order(
    seeded: Seeded, clickhouse_settings: ClickHouseSettings
) -> None:
    trigger = next(e for e in seeded.events if isinstance(e, Trigger))
    # One instant shared by facts of several nodes, a decision and (shifted to it) its results:
    # only the rank and the ids order them.
    crowd: list[Event] = [
        NodeHeartbeat(
            source="test",
            cluster=trigger.cluster,
            subject=f"n-{i:02d}",
            occurred_at=trigger.occurred_at,
            payload={"agent_version": "1", "gpus": 8, "interval_s": 60},
        )
        for i in range(12)
    ]
    crowd += [
        r.model_copy(update={"occurred_at": trigger.occurred_at}) for r in results_of(trigger)
    ]
    with connect(clickhouse_settings) as client:
        insert_events(client, crowd)
        # The sink writes a record again when it is delivered again: a second copy of each (in
        # another order, so that the server's insert deduplication keeps it), read once.
        insert_events(client, crowd[::-1])
        copies = client.query(
            "SELECT count() FROM events WHERE event_id IN {ids:Array(UUID)}",
            parameters={"ids": [e.event_id for e in crowd]},
        ).result_rows
    assert copies == [(2 * len(crowd),)]
    expected = sorted([*seeded.events, *crowd], key=event_time_key)
    read = list(
        stream_events_between(
            clickhouse_settings,
            seeded.now - timedelta(hours=2),
            seeded.now + timedelta(minutes=10),
            page_events=5,
        )
    )
    assert [str(e.event_id) for e in read] == [str(e.event_id) for e in expected]
    at_the_instant = [type(e).__name__ for e in read if e.occurred_at == trigger.occurred_at]
    assert at_the_instant[-3] == trigger.type
    assert sorted(at_the_instant[-2:]) == ["ActionStarted", "ActionSucceeded"]
    # A range with nothing in it, or none at all, reads nothing (and asks the server nothing).
    empty = seeded.now + timedelta(days=1)
    assert list(stream_events_between(clickhouse_settings, empty, empty + timedelta(hours=1))) == []
    assert list(stream_events_between(clickhouse_settings, empty, empty)) == []
