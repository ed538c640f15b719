"""`centrality bench replay`: re-deciding a day of simulated history read from ClickHouse."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import typer

from centrality.bench.cli import bench_app, report
from centrality.bench.history_data import day_of_history, insert_events, with_decisions
from streams.history.client import connect
from streams.history.migrations import migrate
from streams.history.settings import ClickHouseSettings
from streams.replay.clickhouse_source import ClickHouseSource, Scope
from streams.replay.rerun import compare, default_warmup_s, rerun_current


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
    history = with_decisions(day_of_history(now, jobs=jobs, nodes=nodes))
    try:
        migrate(db)
        with connect(db) as client:
            insert_events(client, history)
        started = time.perf_counter()
        scope = Scope(now - timedelta(days=1, minutes=1), now + timedelta(minutes=1))
        loaded = ClickHouseSource(db, scope).load(default_warmup_s())
        read_s = time.perf_counter() - started
        now_decided = rerun_current([*loaded.warmup, *loaded.inputs], start=loaded.since)
        decisions = compare(now_decided, loaded.recorded)
        total_s = time.perf_counter() - started
    finally:
        with connect(base, database="default") as client:
            client.command(f"DROP DATABASE IF EXISTS `{db.database}`")
    same = sum(d.status == "same" for d in decisions)
    result = {
        "events": len(loaded.inputs),
        "rate_eps": round(len(loaded.inputs) / total_s),
        "read_s": round(read_s, 2),
        "decide_s": round(total_s - read_s, 2),
        "decisions": len(decisions),
        "same": same,
    }
    report("bench replay (one simulated day)", result, json=json)
