"""A day of history whose decisions cross the parts a replay cuts the brain into."""

from __future__ import annotations

from datetime import timedelta

from centrality.bench.history_data import day_of_history, job_run
from schemas.envelope import Event
from streams.analysis.replay.rerun import current_brain, rerun
from streams.brain.process import Brain
from streams.history.query import event_time_key
from streams.settings import StreamsSettings
from streams.testing import T0, result, xid

PAIR = ("n-0001", "n-0004")  # in different parts of two and of three
FATAL_XID_NODE = "n-0007"
START = T0
END = T0 + timedelta(days=1)


def crossing_day() -> list[Event]:
    """A day of 12 nodes and 60 jobs, plus a pair of nodes in different parts failing six jobs
    (their node set's quarantine reaches both parts) and a fatal XID; the drains succeed (their
    results, kept by every part, reach the nodes, which go on to be benchmarked). Facts only:
    deciding is the replay's part."""
    first = T0 + timedelta(hours=6)
    pair_runs = [
        e
        for k in range(6)
        for e in job_run(
            f"slurm/sim/pair-{k}", PAIR, first + timedelta(minutes=5 * k), "sim", crash=True
        )
    ]
    fatal = xid(FATAL_XID_NODE, 79, at_s=12 * 3600)
    facts = [*day_of_history(END, 60, 12), *pair_runs, fatal]
    brain: Brain = current_brain()
    drains = [
        result(t, at_s=(t.occurred_at - T0).total_seconds() + 5)
        for t in rerun(facts, brain, StreamsSettings().tick_interval_s)
        if t.type == "QuarantineNodes"
    ]
    return sorted([*facts, *drains], key=event_time_key)
