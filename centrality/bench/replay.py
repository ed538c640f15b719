"""`centrality bench replay`: re-deciding a day of simulated history read from ClickHouse."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta

import typer

from centrality.bench.cli import bench_app, report
from centrality.bench.history_data import day_of_history, insert_events, inserting, results_of
from schemas.envelope import Event
from streams.history.client import connect
from streams.history.migrations import migrate
from streams.history.query import event_time_key
from streams.history.settings import ClickHouseSettings
from streams.replay.clickhouse_source import ClickHouseSource, Scope
from streams.replay.rerun import compare, current_brain, default_warmup_s, rerun_stream
from streams.settings import StreamsSettings


@bench_app.command("replay")
def bench_replay(
    jobs: int = typer.Option(400, help="Jobs run during the simulated day."),
    nodes: int = typer.Option(16, help="Nodes, each with 8 GPUs sampled every 5 minutes."),
    json: bool = typer.Option(False, "--json", help="Print one JSON line."),
) -> None:
    """Replay speed (events/s) over a day of history: read, decode, re-decide, compare."""
    now = datetime.now(UTC)
    base = ClickHouseSettings()
    db = base.model_copy(update={"database": f"bench_replay_{uuid.uuid4().hex[:8]}"})
    tick_s = StreamsSettings().tick_interval_s
    try:
        migrate(db)
        record_a_day(db, now, jobs, nodes, tick_s)
        started = time.perf_counter()
        scope = Scope(now - timedelta(days=1, minutes=1), now + timedelta(minutes=1))
        streamed = ClickHouseSource(db, scope).stream(default_warmup_s())
        reading = Timed(streamed.facts)
        decided = rerun_stream(reading, current_brain(), tick_s, start=streamed.since)
        decisions = compare(decided, streamed.recorded)
        total_s = time.perf_counter() - started
    finally:
        with connect(base, database="default") as client:
            client.command(f"DROP DATABASE IF EXISTS `{db.database}`")
    same = sum(d.status == "same" for d in decisions)
    result = {
        "nodes": nodes,
        "events": reading.count,
        "rate_eps": round(reading.count / total_s),
        "read_s": round(reading.spent_s, 2),
        "decide_s": round(total_s - reading.spent_s, 2),
        # Per event re-decided: the query and its decoding, then fold, rules and ticks.
        "read_us_per_event": round(1e6 * reading.spent_s / max(reading.count, 1), 1),
        "decide_us_per_event": round(1e6 * (total_s - reading.spent_s) / max(reading.count, 1), 1),
        "decisions": len(decisions),
        "same": same,
    }
    report("bench replay (one simulated day)", result, json=json)


def record_a_day(
    db: ClickHouseSettings, now: datetime, jobs: int, nodes: int, tick_s: float
) -> None:
    """The day written as it is made, with what was decided then: the rules over it as it
    passes, and the results an action worker would have reported."""
    with connect(db) as client:
        then = rerun_stream(
            inserting(client, day_of_history(now, jobs, nodes)), current_brain(), tick_s
        )
        results = (r for t in then for r in results_of(t))
        insert_events(client, sorted([*then, *results], key=event_time_key))


class Timed:
    """Events passed on, counted, with the time spent producing them (reading, decoding)."""

    def __init__(self, events: Iterable[Event]) -> None:
        self._events = iter(events)
        self.count = 0
        self.spent_s = 0.0

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        started = time.perf_counter()
        try:
            event = next(self._events)
        finally:
            self.spent_s += time.perf_counter() - started
        self.count += 1
        return event
