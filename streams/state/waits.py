"""Who a job's hosts wait for at their collectives: NCCL Inspector's times compared by host
(`schemas.events.collectives`).

Timed on the GPU, a collective ends on every rank together, so the host that starts it last shows
the shortest time and the others the longest. A host whose collectives take `WAITED` times less
than the job's other hosts' in the same communicator, and at least `WAIT_MIN_US` less, is the one
they wait for: the late arrival that step times cannot name in synchronous training, where every
rank logs the same step time (`streams.state.pace`). Only GPU-timed summaries across hosts are
compared: a CPU's span starts when the collective is queued, not when its kernel runs.

Bounded like every state (`streams.state.bounds`): per key (communicator, collective, message
size) one time per host, the newest `KEYS_KEPT` keys, `JOB_NODES_KEPT` hosts a key; a new attempt
starts afresh.
"""

from __future__ import annotations

from datetime import datetime
from statistics import median

from pydantic import BaseModel, ConfigDict, Field

from schemas.events.collectives import CollectivesTimedPayload
from streams.state.bounds import JOB_NODES_KEPT

WAITED = 1.5
WAIT_MIN_US = 1000.0  # under a millisecond a step is noise, whatever the ratio
KEYS_KEPT = 8


class Waited(BaseModel):
    """Since when a host's peers have waited for it, how much longer their collectives take than
    its own (a ratio), and by how much."""

    model_config = ConfigDict(frozen=True)

    since: datetime
    ratio: float
    wait_ms: float
    collective: str


class Waits(BaseModel):
    model_config = ConfigDict(frozen=True)

    times: dict[str, dict[str, float]] = Field(default_factory=dict)  # key → host → µs
    waited: dict[str, Waited] = Field(default_factory=dict)  # host → since when, how much


def waits_after(w: Waits, p: CollectivesTimedPayload, at: datetime) -> Waits | None:
    """The job's waits with one host's summary; None when it tells nothing (CPU-timed, inside
    one host, or one host too many)."""
    if p.timing != "kernel_gpu" or p.comm_nodes < 2:
        return None
    key = f"{p.communicator}/{p.collective}/{p.size_bytes}"
    hosts = w.times.get(key, {})
    if p.node not in hosts and len(hosts) >= JOB_NODES_KEPT:
        return None
    times = {k: v for k, v in w.times.items() if k != key}  # the key moves to the newest
    times[key] = {**hosts, p.node: round(p.exec_us)}
    if len(times) > KEYS_KEPT:
        times = dict(list(times.items())[-KEYS_KEPT:])
    waited = dict(w.waited)
    judged = _judge(times, p.node)
    if judged is None:
        waited.pop(p.node, None)
    else:
        ratio, wait_ms, collective = judged
        old = w.waited.get(p.node)
        since = old.since if old is not None else at
        waited[p.node] = Waited(since=since, ratio=ratio, wait_ms=wait_ms, collective=collective)
    return Waits(times=times, waited=waited)


def _judge(times: dict[str, dict[str, float]], host: str) -> tuple[float, float, str] | None:
    """(ratio, wait in ms, the collective most waited at) when `host`'s peers wait for it: over
    the keys it shares with other hosts, the median ratio and wait."""
    found: list[tuple[float, float, str]] = []
    for key, hosts in times.items():
        mine = hosts.get(host)
        others = [t for h, t in hosts.items() if h != host]
        if mine is None or not others:
            continue
        theirs = median(others)
        # From the right: a communicator's id is the writer's to choose, and may hold a "/".
        found.append((theirs / max(mine, 1.0), theirs - mine, key.rsplit("/", 2)[1]))
    if not found:
        return None
    ratio = median(f[0] for f in found)
    wait_us = median(f[1] for f in found)
    if ratio < WAITED or wait_us < WAIT_MIN_US:
        return None
    worst = max(found, key=lambda f: f[1])
    return round(ratio, 2), round(wait_us / 1000, 1), worst[2]
