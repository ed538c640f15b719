"""`centrality bench codec`: encode + decode + validate of a realistic mix of messages, next to
bare orjson dumps + loads of the same documents, in the same process and run."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import orjson
import typer

from centrality.bench.cli import bench_app, report
from schemas.codec import decode, encode, encode_batch
from schemas.events import (
    CheckpointSaved,
    GpuSampled,
    JobExited,
    JobStateChanged,
    LogLinesObserved,
    NodeHealthChecked,
    NodeHeartbeat,
)


def mix(nodes: int) -> list[bytes]:
    """One interval of a cluster as it travels: per node a batch of 8 GPU samples, a heartbeat
    and a health check; per job (one per 4 nodes) a state change, a checkpoint, a batch of 20 log
    lines and an exit."""
    now = datetime.now(UTC)
    messages: list[bytes] = []
    for n in range(nodes):
        messages.extend(_node_messages(now, f"gpu-{n:04d}"))
    for j in range(max(1, nodes // 4)):
        messages.extend(_job_messages(now, j, nodes))
    return messages


def _env(now: datetime, subject: str, age_s: float = 0) -> dict[str, Any]:
    """An event's envelope from the bench's source, `age_s` before `now`."""
    return {
        "source": "bench",
        "cluster": "bench",
        "subject": subject,
        "occurred_at": now - timedelta(seconds=age_s),
    }


def _node_messages(now: datetime, node: str) -> list[bytes]:
    """A node's interval: its GPUs' samples in one batch, a heartbeat, a health check."""
    samples = [GpuSampled(**_env(now, node), payload=_sample(g)) for g in range(8)]
    heartbeat = NodeHeartbeat(
        **_env(now, node), payload={"agent_version": "1.0", "gpus": 8, "interval_s": 1.0}
    )
    checked = NodeHealthChecked(
        **_env(now, node), payload={"check": "gpu_count", "status": "OK", "message": "8/8 GPUs"}
    )
    return [encode_batch(samples), encode(heartbeat), encode(checked)]


def _job_messages(now: datetime, j: int, nodes: int) -> list[bytes]:
    """Job `j`'s interval on four of the `nodes`: running, a checkpoint, 20 log lines in one
    batch, its exit."""
    job = f"slurm/bench/{j}"
    nodes_of = [f"gpu-{(4 * j + k) % nodes:04d}" for k in range(4)]
    running = JobStateChanged(
        **_env(now, job, 60),
        payload={"state": "RUNNING", "raw_state": "RUNNING", "nodes": nodes_of},
    )
    checkpoint = CheckpointSaved(
        **_env(now, job, 30),
        payload={
            "step": 1000 + j,
            "uri": f"s3://ckpt/{j}/step-{1000 + j}",
            "size_bytes": 2**34,
        },
    )
    lines = [
        {"line": f"step {s} loss 1.{s:03d}", "rank": s % 8, "node": nodes_of[0]} for s in range(20)
    ]
    logged = LogLinesObserved(**_env(now, job, 5), payload={"lines": lines})
    exited = JobExited(
        **_env(now, job),
        payload={"state": "FAILED", "exit_code": 1, "nodes": nodes_of, "gpus": 32},
    )
    return [encode(running), encode(checkpoint), encode_batch([logged]), encode(exited)]


def _sample(gpu: int) -> dict[str, Any]:
    return {
        "gpu": gpu,
        "uuid": f"GPU-{gpu:08d}",
        "utilization_pct": 97.0,
        "memory_used_bytes": 70 * 2**30,
        "memory_total_bytes": 80 * 2**30,
        "temperature_c": 64.0,
        "power_w": 612.5,
        "sm_clock_mhz": 1980,
        "memory_clock_mhz": 2619,
        "throttle_reasons": [],
        "ecc_single_bit": 0,
        "ecc_double_bit": 0,
        "retired_pages": 0,
        "remapped_rows_correctable": 0,
        "remapped_rows_uncorrectable": 0,
        "nvlink_crc_errors": 0,
        "nvlink_replay_errors": 0,
        "pcie_replay_errors": 0,
    }


def ours(messages: list[bytes]) -> int:
    count = 0
    for m in messages:
        for event in decode(m):
            encode(event)
            count += 1
    return count


def bare(messages: list[bytes]) -> int:
    count = 0
    for m in messages:
        doc = orjson.loads(m)
        for item in doc if isinstance(doc, list) else (doc,):
            orjson.dumps(item)
            count += 1
    return count


def ours_decode(messages: list[bytes]) -> int:
    return sum(len(decode(m)) for m in messages)


def bare_decode(messages: list[bytes]) -> int:
    return sum(len(d) if isinstance(d, list) else 1 for d in map(orjson.loads, messages))


def rate(fn: Callable[[list[bytes]], int], messages: list[bytes], seconds: float) -> float:
    """Events/s, the best of three timed stretches (the least disturbed by the machine)."""
    best = 0.0
    for _ in range(3):
        events, started = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - started) < seconds / 3:
            events += fn(messages)
        best = max(best, events / elapsed)
    return best


@bench_app.command("codec")
def bench_codec(
    nodes: Annotated[int, typer.Option(help="Nodes in the mix (8 GPUs each).")] = 64,
    seconds: Annotated[float, typer.Option(help="Timed seconds per measurement.")] = 3.0,
    json: Annotated[bool, typer.Option("--json", help="Print one JSON line.")] = False,
) -> None:
    """Codec events/s against bare orjson on the same documents (target ≥ 50%)."""
    messages = mix(nodes)
    events = ours_decode(messages)
    full, full_bare = rate(ours, messages, seconds), rate(bare, messages, seconds)
    dec, dec_bare = rate(ours_decode, messages, seconds), rate(bare_decode, messages, seconds)
    result: dict[str, object] = {
        "events": events,
        "messages": len(messages),
        "rate_eps": round(full),
        "bare_rate_eps": round(full_bare),
        "ratio": round(full / full_bare, 3),
        "decode_rate_eps": round(dec),
        "bare_decode_rate_eps": round(dec_bare),
        "decode_ratio": round(dec / dec_bare, 3),
    }
    report("bench codec (encode + decode + validate vs bare orjson)", result, json=json)
