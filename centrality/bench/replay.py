"""`centrality bench replay`: re-deciding a day of simulated history read from ClickHouse."""

from __future__ import annotations

import os
import time
import uuid
from datetime import UTC, datetime, timedelta

import typer

from centrality.bench.cli import bench_app, report
from centrality.bench.history_data import day_of_history, insert_events, inserting, results_of
from streams.analysis.replay.clickhouse_source import ClickHouseSource, Scope
from streams.analysis.replay.parallel import rerun_parts
from streams.analysis.replay.rerun import compare, current_brain, default_warmup_s, rerun_stream
from streams.analysis.whatif.candidate import candidate
from streams.analysis.whatif.run import warmup_for, what_if
from streams.history.client import connect
from streams.history.migrations import migrate
from streams.history.query import event_time_key
from streams.history.settings import ClickHouseSettings
from streams.settings import StreamsSettings

WHATIF = typer.Option(
    None,
    "--whatif",
    help="Also time `centrality whatif` with this candidate setting (rule.field=value, "
    "repeatable) over the same day.",
)


@bench_app.command("replay")
def bench_replay(
    jobs: int = typer.Option(4000, help="Jobs run during the simulated day."),
    nodes: int = typer.Option(
        1000,
        help="Nodes, each with 8 GPUs sampled every 5 minutes (1,000: ~2.6M events, written to "
        "ClickHouse in ~2 min before the replay is timed).",
    ),
    parts: int = typer.Option(
        os.cpu_count() or 1,
        min=1,
        help="Processes re-deciding it, each a part of the fleet's nodes (default: one a core).",
    ),
    whatif: list[str] | None = WHATIF,
    json: bool = typer.Option(False, "--json", help="Print one JSON line."),
) -> None:
    """Replay speed (events/s) over a day of history: read, decode, re-decide, compare.

    With --whatif, then `centrality whatif`'s run over the same day, timed beside it (target: at
    most 1.1 times the replay)."""
    now = datetime.now(UTC)
    base = ClickHouseSettings()
    db = base.model_copy(update={"database": f"bench_replay_{uuid.uuid4().hex[:8]}"})
    tick_s = StreamsSettings().tick_interval_s
    try:
        migrate(db)
        record_a_day(db, now, jobs, nodes, tick_s)
        started = time.perf_counter()
        scope = Scope(now - timedelta(days=1, minutes=1), now + timedelta(minutes=1))
        rerun = rerun_parts(ClickHouseSource(db, scope), default_warmup_s(), parts)
        decisions = compare(rerun.decided, rerun.recorded)
        total_s = time.perf_counter() - started
        priced = time_whatif(ClickHouseSource(db, scope), whatif, parts) if whatif else None
    finally:
        with connect(base, database="default") as client:
            client.command(f"DROP DATABASE IF EXISTS `{db.database}`")
    same = sum(d.status == "same" for d in decisions)
    events = max(rerun.events, 1)
    result: dict[str, object] = {
        "nodes": nodes,
        "parts": rerun.parts,
        "events": rerun.events,
        "rate_eps": round(rerun.events / total_s),
        "wall_s": round(total_s, 2),
        # Summed over the parts: what one event costs, wherever it was re-decided: the query
        # and its decoding, then fold, rules and ticks.
        "read_us_per_event": round(1e6 * rerun.read_s / events, 1),
        "decide_us_per_event": round(1e6 * (rerun.busy_s - rerun.read_s) / events, 1),
        "decisions": len(decisions),
        "same": same,
    }
    if priced is not None:
        wall_s, figures = priced
        result |= figures
        result["whatif_wall_s"] = round(wall_s, 2)
        result["whatif_ratio"] = round(wall_s / total_s, 3)
    report("bench replay (one simulated day)", result, json=json)


def time_whatif(
    source: ClickHouseSource, sets: list[str], parts: int
) -> tuple[float, dict[str, object]]:
    """The what-if run as `centrality whatif` makes it (re-decide, compare, name, price): its
    wall time and what it found."""
    cand = candidate(StreamsSettings(), sets=sets)
    started = time.perf_counter()
    run = what_if(source, cand, warmup_for(cand), parts, datetime.now(UTC))
    return time.perf_counter() - started, {
        "whatif": cand.words,
        "whatif_differing": sum(d.status != "same" for d in run.decisions),
        "whatif_priced": len(run.priced),
        "whatif_gpu_h": round(sum(p.price.gpu_h for p in run.priced), 1),
    }


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
