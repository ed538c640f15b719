"""Simulated history built with the contract's own events: an incident hour, or a whole day.

Recorded decisions are what the current rules decide over the generated events (so a replay of
the same range reproduces them), followed by the action results a worker would have emitted.
"""

from __future__ import annotations

import collections
import heapq
import itertools
import random
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

from schemas.envelope import Event
from schemas.events import (
    ActionStarted,
    ActionSucceeded,
    BenchmarkCompleted,
    CheckpointSaved,
    GpuSampled,
    GpuXidObserved,
    JobExited,
    JobStateChanged,
    JobSubmitted,
    LogLinesObserved,
    LogSignalDetected,
    NcclSampled,
    NodeHealthChecked,
    NodeHeartbeat,
    Trigger,
)
from streams.analysis.replay.rerun import rerun_current
from streams.history.query import event_time_key
from streams.history.rows import EVENT_COLUMNS, event_row


def _env(subject: str, at: datetime, cluster: str, source: str = "sim") -> dict[str, Any]:
    return {"source": source, "cluster": cluster, "subject": subject, "occurred_at": at}


def job_run(
    job: str,
    nodes: Sequence[str],
    start: datetime,
    cluster: str,
    *,
    crash: bool,
    steps: int = 3,
) -> list[Event]:
    """A job submitted, running on `nodes`, checkpointing, then finishing or crashing."""
    at = start
    events: list[Event] = [
        JobSubmitted(**_env(job, at, cluster), payload={"name": job, "gpus_requested": 16}),
        JobStateChanged(
            **_env(job, at + timedelta(seconds=5), cluster),
            payload={"state": "RUNNING", "raw_state": "RUNNING", "nodes": list(nodes)},
        ),
    ]
    for i in range(1, steps + 1):
        at = start + timedelta(minutes=5 * i)
        events.append(
            CheckpointSaved(
                **_env(job, at, cluster),
                payload={"step": 100 * i, "uri": f"s3://ckpt/{job}/step-{100 * i}"},
            )
        )
    lines = [{"line": f"step {100 * steps} loss 1.2", "node": nodes[0], "rank": 0}]
    events.append(
        LogLinesObserved(**_env(job, at + timedelta(seconds=30), cluster), payload={"lines": lines})
    )
    end = at + timedelta(minutes=2)
    if crash:
        events.append(
            LogSignalDetected(
                **_env(job, end - timedelta(seconds=1), cluster),
                payload={"signal": "NCCL_ERROR", "line": "NCCL error: unhandled", "node": nodes[0]},
            )
        )
    else:
        events.append(
            LogSignalDetected(
                **_env(job, end - timedelta(seconds=1), cluster),
                payload={"signal": "TRAINING_COMPLETE", "line": "Training Complete"},
            )
        )
    events.append(
        JobExited(
            **_env(job, end, cluster),
            payload={
                "state": "FAILED" if crash else "SUCCEEDED",
                "raw_state": "NODE_FAIL" if crash else "COMPLETED",
                "exit_code": 1 if crash else 0,
                "nodes": list(nodes),
                "gpus": 8 * len(nodes),
            },
        )
    )
    return events


def node_telemetry(
    node: str, start: datetime, end: datetime, cluster: str, *, sick: bool, interval_s: int = 60
) -> list[Event]:
    """Heartbeats and per-GPU samples; a sick node shows ECC/NVLink errors in its second half."""
    return list(telemetry_stream(node, start, end, cluster, sick=sick, interval_s=interval_s))


def telemetry_stream(
    node: str, start: datetime, end: datetime, cluster: str, *, sick: bool, interval_s: int = 60
) -> Iterator[Event]:
    """`node_telemetry`, made as it is read."""
    at = start
    half = start + (end - start) / 2
    while at < end:
        yield NodeHeartbeat(
            **_env(node, at, cluster, "agent"),
            payload={"agent_version": "1", "gpus": 8, "interval_s": interval_s},
        )
        broken = sick and at >= half
        for gpu in range(8):
            yield (
                GpuSampled(
                    **_env(node, at, cluster, "agent"),
                    payload={
                        "gpu": gpu,
                        "utilization_pct": 97.0,
                        "temperature_c": 71.0 + gpu,
                        "power_w": 650.0,
                        "ecc_double_bit": 2 if broken and gpu == 3 else 0,
                        "nvlink_crc_errors": 5 if broken and gpu == 3 else 0,
                        "throttle_reasons": ["hw_slowdown"] if broken and gpu == 3 else [],
                    },
                )
            )
        at += timedelta(seconds=interval_s)


def incident(now: datetime, node: str = "n-07", cluster: str = "sim") -> list[Event]:
    """The last hour of a cluster in which `node` goes bad and takes a job down with it."""
    start = now - timedelta(minutes=55)
    peer = "n-08"
    events = [
        *node_telemetry(node, start, now, cluster, sick=True),
        *node_telemetry(peer, start, now, cluster, sick=False),
        *job_run(f"slurm/{cluster}/1001", [node, peer], start, cluster, crash=True, steps=6),
        *job_run(f"slurm/{cluster}/1002", [peer], start, cluster, crash=False),
    ]
    symptom = start + timedelta(minutes=25)
    events += [
        GpuXidObserved(
            **_env(node, symptom, cluster, "agent"),
            payload={"gpu": 3, "xid": 79, "message": "GPU has fallen off the bus"},
        ),
        NodeHealthChecked(
            **_env(node, symptom + timedelta(seconds=20), cluster, "agent"),
            payload={"check": "dcgm", "status": "CRITICAL", "message": "GPU 3 unreachable"},
        ),
        NcclSampled(
            **_env(node, symptom - timedelta(minutes=1), cluster, "agent"),
            payload={
                "collective": "all_reduce",
                "size_bytes": 1 << 30,
                "algbw_gbps": 80.0,
                "busbw_gbps": 140.0,
                "duration_us": 9000.0,
                "ranks": 16,
            },
        ),
        BenchmarkCompleted(
            **_env(node, now - timedelta(minutes=4), cluster, "actions"),
            payload={"node": node, "verdict": "fail", "reasons": ["gpu 3 matmul: no device"]},
        ),
    ]
    return sorted(events, key=event_time_key)


def day_of_history(
    now: datetime, jobs: int = 400, nodes: int = 16, seed: int = 7
) -> Iterator[Event]:
    """A day of a cluster, in event-time order, made as it is read (a 1,000-node day is millions
    of events): node telemetry every 5 min and `jobs` runs, a fifth of them crashing."""
    rng = random.Random(seed)
    start = now - timedelta(days=1)
    names = [f"n-{i:04d}" for i in range(nodes)]
    runs: list[Event] = []
    for j in range(jobs):
        at = start + timedelta(seconds=rng.uniform(0, 22 * 3600))
        runs += job_run(f"slurm/sim/{j}", rng.sample(names, 2), at, "sim", crash=rng.random() < 0.2)
    streams = [
        _each_instant_sorted(
            telemetry_stream(name, start, now, "sim", sick=name == names[0], interval_s=300)
        )
        for name in names
    ]
    return heapq.merge(*streams, sorted(runs, key=event_time_key), key=event_time_key)


def _each_instant_sorted(events: Iterable[Event]) -> Iterator[Event]:
    """A time-ordered stream in `event_time_key` order, as `heapq.merge` needs its inputs."""
    for _, same in itertools.groupby(events, key=lambda e: e.occurred_at):
        yield from sorted(same, key=event_time_key)


def with_decisions(events: Iterable[Event]) -> list[Event]:
    """The events plus the triggers the current rules decide over them and a worker's results."""
    inputs = list(events)
    out: list[Event] = list(inputs)
    for trigger in rerun_current(inputs):
        out += [trigger, *results_of(trigger)]
    return sorted(out, key=event_time_key)


def results_of(trigger: Trigger) -> list[Event]:
    body = {
        "trigger_id": trigger.event_id,
        "trigger_type": trigger.type,
        "action": trigger.payload.rule,
    }
    env = {"source": "actions", "cluster": trigger.cluster, "subject": trigger.subject}
    return [
        ActionStarted(**env, occurred_at=trigger.occurred_at + timedelta(seconds=2), payload=body),
        ActionSucceeded(
            **env,
            occurred_at=trigger.occurred_at + timedelta(seconds=5),
            payload={**body, "detail": {"job_id": trigger.subject}},
        ),
    ]


def insert_events(client: Any, events: Iterable[Event], topic_prefix: str = "centrality.") -> None:
    """Write events to `events` as the sink would (the typed tables follow by their views)."""
    collections.deque(inserting(client, events, topic_prefix), maxlen=0)


def inserting(
    client: Any, events: Iterable[Event], topic_prefix: str = "centrality.", chunk: int = 20_000
) -> Iterator[Event]:
    """Each event, passed on while they are written to `events` a chunk at a time."""
    rows: list[list[Any]] = []
    for offset, event in enumerate(events):
        rows.append(event_row(event, f"{topic_prefix}{event.topic}", 0, offset))
        if len(rows) == chunk:
            client.insert("events", rows, column_names=EVENT_COLUMNS)
            rows = []
        yield event
    if rows:
        client.insert("events", rows, column_names=EVENT_COLUMNS)
