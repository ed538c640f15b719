"""`bench goodput --slow-nodes`: what the workers did carried out on the slow-node fleets (a
checkpoint asked for, a running job moved off its slow node, the node returned once sound),
and the GPU-hours each world lost, slowness included."""

from __future__ import annotations

import asyncio
import io
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from rich.console import Console

from centrality.bench.goodput import (
    SLOW_CLUSTERS,
    Options,
    fleet_ettr,
    print_slow,
    rule_config,
    slow_figures,
)
from centrality.bench.goodput_loop import Fleet, Period
from collectors.events import Stamp
from collectors.simulate.config import SimConfig
from collectors.simulate.model import ClusterModel
from schemas.envelope import Event
from schemas.events import ActionSucceeded, RestartJob
from schemas.runtime.settings import KafkaSettings
from streams.state.entities import JOBS

START = datetime(2026, 3, 1, tzinfo=UTC)
STEP_S, HOURS, GPUS = 60.0, 3.0, 4  # the job holds two nodes of two GPUs
END = START + timedelta(hours=HOURS)
JOB = "slurm/{cluster}/1"


def fleet(cluster: str) -> Fleet:
    """Three nodes, one job on the first two from 0 s; the seed puts one spell, twice as slow
    and longer than the period, on the first node, from the tick of 60 s."""
    config = SimConfig(
        nodes=3,
        gpus=2,
        jobs=1,
        nodes_per_job=(2, 2),
        job_duration_s=(14_400.0, 14_400.0),
        checkpoint_every_s=1200.0,
        interval_s=STEP_S,
        slow_nodes=1,
        slow_factor=(2.0, 2.0),
        slow_duration_s=(36_000.0, 36_000.0),
        horizon_s=1.0,
        restart_s=600.0,
        seed=1,
        cluster=cluster,
        node_prefix=f"{cluster}-",
    )
    model = ClusterModel(config, START)
    assert model.spells[0].node == f"{cluster}-0000"
    return Fleet(model, automated=True)


class Sink:
    async def emit_batch(self, batch: list[Event]) -> None:
        return None


def period(fleets: list[Fleet], tmp_path: Path) -> Period:
    nobody: Any = None  # no lags are sampled: nothing settles here
    return Period(
        KafkaSettings(),
        fleets,
        cast(Any, Sink()),
        nobody,
        tmp_path / "unhealthy.json",
        response_s=1800.0,
        repair_s=0.0,
    )


def succeeded(f: Fleet, trigger: str, subject: str, **payload: Any) -> ActionSucceeded:
    body = {"trigger_id": uuid.uuid4(), "trigger_type": trigger, "action": trigger} | payload
    return Stamp("test", f.cluster).make(ActionSucceeded, subject, body, f.model.at)


def restart(f: Fleet, attempt: int, exclude: tuple[str, ...]) -> RestartJob:
    payload = {
        "rule": "slow_node",
        "window": f"attempt-{attempt}",
        "reason": "slow",
        "caused_by": (),
        "checkpoint_uri": None,
        "attempt": attempt,
        "exclude_nodes": exclude,
    }
    return Stamp("test", f.cluster).make(RestartJob, JOB.format(cluster=f.cluster), payload)


async def move(p: Period, f: Fleet, attempt: int = 1) -> None:
    """The slow node's quarantine with `move_jobs` drained, and the job's restart off it."""
    node, job = f"{f.cluster}-0000", JOB.format(cluster=f.cluster)
    await p._apply(f, succeeded(f, "QuarantineNodes", node, nodes=(node,), move_jobs=True))
    trigger = restart(f, attempt, (node,))
    await p._apply(f, trigger)
    await p._apply(f, succeeded(f, "RestartJob", job, trigger_id=trigger.event_id))
    p._sent = time.monotonic()
    await p._requeue()


async def live(p: Period, f: Fleet, policy: str) -> None:
    t = 0.0
    while t <= HOURS * 3600:
        events = f.model.tick(t)
        f.job_events += [e for e in events if type(e) in JOBS.owns]
        await p._emit(f, events)
        if policy == "now" and t == 120.0:
            await move(p, f)
        if policy == "timed" and t == 120.0:  # asked for a checkpoint: written at 180 s
            await p._apply(f, succeeded(f, "RequestCheckpoint", JOB.format(cluster=f.cluster)))
        if policy == "timed" and t == 180.0:
            await move(p, f)
        await p._people(t)
        t += STEP_S


def test_the_three_worlds_lose_what_slowness_and_each_policy_cost(tmp_path: Path) -> None:
    fleets = {name: fleet(cluster) for cluster, name in SLOW_CLUSTERS.items()}
    p = period(list(fleets.values()), tmp_path)
    for name, f in fleets.items():
        asyncio.run(live(p, f, name))
    e = {name: fleet_ettr(f, END) for name, f in fleets.items()}
    # Left: the job runs at half pace from 60 s; its checkpoints (every 1200 s of work) come
    # every 2400 s, the last at 9540 s. Of the running time they saved, half did no work.
    left = (9540 - 60) * 0.5 * GPUS
    assert fleets["left"].model.slow_lost_gpu_s == {"slurm/slow-left/1": pytest.approx(left)}
    assert e["left"].lost_gpu_s == pytest.approx(left)
    assert e["left"].productive_gpu_s == pytest.approx(9540 * GPUS - left)
    assert e["left"].open_gpu_s == pytest.approx((10_800 - 9540) * GPUS)
    # Now: moved just after 120 s (the workers' moment) with no checkpoint yet (all lost), back
    # at the first tick 600 s later (780 s) on the other two nodes, at a healthy pace:
    # checkpoints every 1200 s from there, the last at 10,380 s.
    assert e["now"].lost_gpu_s == pytest.approx(780 * GPUS, abs=1)
    assert e["now"].productive_gpu_s == pytest.approx(9600 * GPUS, abs=1)
    assert e["now"].open_gpu_s == pytest.approx(420 * GPUS, abs=1)
    # Timed: the checkpoint asked for saved 120 s of work at 180 s (half of its time since
    # 60 s lost to slowness); moved then, back at 840 s; the last checkpoint at 10,440 s.
    slow = 120 * 0.5 * GPUS
    assert fleets["timed"].model.slow_lost_gpu_s == {"slurm/slow-timed/1": pytest.approx(slow)}
    assert e["timed"].lost_gpu_s == pytest.approx(slow + 660 * GPUS, abs=1)
    assert e["timed"].productive_gpu_s == pytest.approx((180 + 9600) * GPUS - slow, abs=1)
    assert e["timed"].open_gpu_s == pytest.approx(360 * GPUS, abs=1)
    for name in fleets:  # slowness moves time from productive to lost, never adds any
        assert e[name].wall_gpu_s == pytest.approx(10_800 * GPUS, abs=1)

    opts = Options(8, 2, 1, HOURS, STEP_S, 1.0, 1800.0, 86_400.0, 1, slow_nodes=1)
    figures = slow_figures(opts, list(fleets.values()), END)
    assert figures["spells"] == [
        {"node": "slow-timed-0000", "at_h": 0.0, "hours": 10.0, "factor": 2.0}
    ]
    timed = figures["timed"]
    assert timed["slow_lost_gpu_h"] == round(slow / 3600, 1)
    assert (timed["checkpoints_asked"], timed["jobs_moved"]) == (1, 1)
    assert (figures["now"]["jobs_moved"], figures["left"]["jobs_moved"]) == (1, 0)
    lost = {n: figures[n]["lost_gpu_h"] + figures[n]["open_gpu_h"] for n in fleets}
    assert figures["saved_vs_now_gpu_h"] == round(lost["now"] - lost["timed"], 1) > 0
    assert figures["saved_vs_left_gpu_h"] == round(lost["left"] - lost["timed"], 1) > 5
    out = io.StringIO()
    print_slow(figures, Console(file=out, width=200))
    said = out.getvalue()
    assert "1 spells, steps x2.00 to x2.00, 10.0 h in all" in said
    assert f"timed saved {figures['saved_vs_now_gpu_h']} GPU-h against draining at once" in said
    assert "leave it (enabled=false)" in said
    # The slow node was taken out (and stays out while it throttles).
    assert fleets["now"].model.nodes["slow-now-0000"].drained


def test_a_restart_decided_on_an_attempt_since_ended_moves_nothing(tmp_path: Path) -> None:
    f = fleet("slow-timed")
    p = period([f], tmp_path)
    asyncio.run(p._emit(f, f.model.tick(0.0)))
    asyncio.run(move(p, f, attempt=2))  # the job runs its first attempt
    assert f.moved == 0 and f.model.jobs["slurm/slow-timed/1"].attempt == 1


def test_a_move_carried_out_before_its_trigger_is_read_waits_for_it(tmp_path: Path) -> None:
    """The trigger and its result come on topics of their own, in either order."""
    f = fleet("slow-now")
    p = period([f], tmp_path)
    asyncio.run(p._emit(f, f.model.tick(0.0)))
    trigger, job = restart(f, 1, ("slow-now-0000",)), "slurm/slow-now/1"
    asyncio.run(p._apply(f, succeeded(f, "RestartJob", job, trigger_id=trigger.event_id)))
    assert f.moved == 0
    asyncio.run(p._apply(f, trigger))
    asyncio.run(p._requeue())
    assert f.moved == 1 and f.model.jobs[job].attempt == 2
    assert f.model.jobs[job].avoid == {"slow-now-0000"}


def test_a_slow_node_taken_out_is_returned_once_sound(tmp_path: Path) -> None:
    f = fleet("slow-now")
    p = period([f], tmp_path)
    asyncio.run(p._emit(f, f.model.tick(0.0)))
    asyncio.run(p._emit(f, f.model.tick(60.0)))
    asyncio.run(move(p, f))
    spell = f.model.spells[0]
    assert f.repairs == {spell.node: spell.until_s}  # not before its spell is over


def test_each_slow_world_s_policy_is_a_scope_of_its_cluster() -> None:
    opts = Options(8, 2, 1, HOURS, STEP_S, 1.0, 1800.0, 86_400.0, 1, slow_nodes=2)
    scopes = rule_config(opts)["slow_node"]["scopes"]
    assert scopes == [
        {"match": {"cluster": "slow-timed"}, "timing": "auto", "ask_checkpoint": True},
        {"match": {"cluster": "slow-now"}, "timing": "now"},
        {"match": {"cluster": "slow-left"}, "enabled": False},
    ]
    assert "slow_node" not in rule_config(Options(8, 2, 1, HOURS, STEP_S, 1.0, 1800.0, 86_400.0, 1))
    assert opts.slow_sim("slow-now").taxonomy is None
    assert opts.slow_sim("slow-now").slow_nodes == 2 and opts.slow_sim("slow-now").restart_s == 600
