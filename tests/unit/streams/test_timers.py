"""Timers per entity decide exactly what a sweep over every entity decides, with far fewer ticks."""

from __future__ import annotations

import dataclasses
import random
from datetime import timedelta
from typing import Any

import pytest

import streams.brain.process
from schemas.envelope import Event
from schemas.events import Trigger
from streams.analysis.replay.rerun import rerun
from streams.brain.process import Brain
from streams.brain.timers import STALE_SLACK, Timers, due_instants
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.state import internal
from streams.state.entities import JOBS, NODES
from streams.testing import T0, checkpoint, ended, heartbeat, running, sample

TICK_S = 5.0
CONFIGS: list[dict[str, dict[str, Any]]] = [
    {
        "heartbeat_lost": {"limit_s": 60},
        "idle_allocation": {"idle_s": 300},
        "checkpoint_stall": {"limit_s": 400},
    },
    {  # `for_s` and cooldowns make the engine's own instants matter
        "heartbeat_lost": {"limit_s": 42, "for_s": 30, "cooldown_s": 500},
        "idle_allocation": {"idle_s": 200, "for_s": 17, "cancel_clusters": ["test"]},
        "checkpoint_stall": {"limit_s": 300, "for_s": 50, "cooldown_s": 100},
    },
]


def engines(config: dict[str, dict[str, Any]]) -> tuple[RuleEngine, RuleEngine]:
    """The rules with their due instants, and the same rules without: ticked on every tick."""
    timed = RuleEngine.load(StreamsSettings().rule_modules, config)
    swept = RuleEngine(
        [dataclasses.replace(b, spec=dataclasses.replace(b.spec, due=None)) for b in timed.rules]
    )
    return timed, swept


def history(seed: int, nodes: int = 6, jobs: int = 8, hours: float = 2.0) -> list[Event]:
    """Nodes that heartbeat with gaps (some past the limit), GPUs that idle and wake, jobs that
    run, checkpoint irregularly (some stall) and end."""
    rng = random.Random(seed)
    end_s = hours * 3600
    names = [f"n{i}" for i in range(nodes)]
    events: list[Event] = []
    for name in names:
        at_s, busy = rng.uniform(0, 30), rng.random() < 0.5
        while at_s < end_s:
            events.append(heartbeat(name, at_s=at_s))
            if rng.random() < 0.05:
                busy = not busy
            for gpu in range(2):
                util = 97.0 if busy else 0.0
                events.append(sample(name, gpu=gpu, at_s=at_s, utilization_pct=util))
            at_s += rng.choice([10, 10, 10, 30, 61, 130]) + rng.random()
    for j in range(jobs):
        job, placed = f"slurm/t/{j}", tuple(rng.sample(names, 2))
        start_s = rng.uniform(0, end_s / 2)
        events.append(running(job, at_s=start_s, nodes=placed))
        at_s, step = start_s, 0
        while at_s < start_s + rng.uniform(600, end_s / 2):
            at_s += rng.choice([60, 120, 350, 700])
            step += 1
            events.append(checkpoint(step, job, at_s=at_s))
        state = "SUCCEEDED" if rng.random() < 0.5 else "FAILED"
        events.append(ended(job, state, at_s=at_s + 1, nodes=placed))
    return sorted(events, key=lambda e: (e.occurred_at, e.type, str(e.event_id)))


def decided(engine: RuleEngine, events: list[Event]) -> list[Trigger]:
    return rerun(events, Brain(engine), TICK_S)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("seed", range(3))
def test_timers_decide_what_a_sweep_decides_tick_for_tick(
    config: dict[str, dict[str, Any]], seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = history(seed)
    timed, swept = engines(config)
    ticks = {"n": 0}
    real_tick = internal.tick

    def counted(*args: Any) -> Event:
        ticks["n"] += 1
        return real_tick(*args)

    monkeypatch.setattr(streams.brain.process, "tick", counted)
    by_timers = decided(timed, events)
    timed_ticks, ticks["n"] = ticks["n"], 0
    by_sweep = decided(swept, events)
    # Same triggers, in the same order: ids derive from the tick that decided them, so a
    # decision at another tick would show here.
    assert [t.event_id for t in by_timers] == [t.event_id for t in by_sweep]
    rules = {t.payload.rule for t in by_sweep}
    assert {"heartbeat_lost", "checkpoint_stall"} <= rules, rules  # the histories exercise them
    assert timed_ticks * 5 < ticks["n"], (timed_ticks, ticks["n"])


def test_idle_allocations_are_exercised_too() -> None:
    timed, _ = engines(CONFIGS[0])
    found = [decided(timed, history(seed)) for seed in range(3)]
    assert any(t.payload.rule == "idle_allocation" for triggers in found for t in triggers)


def test_a_limit_compared_with_greater_than_still_fires_on_the_tick_after_the_instant() -> None:
    """Silence of exactly `limit_s` is no loss: the tick at that instant decides nothing, and the
    next one must still be made."""
    timed, _ = engines({"heartbeat_lost": {"limit_s": 60}})
    b = Brain(timed)
    b.handle(heartbeat("n1", at_s=0))
    assert b.tick(T0 + timedelta(seconds=60)) == []
    [lost] = b.tick(T0 + timedelta(seconds=65))
    assert lost.payload.rule == "heartbeat_lost"
    assert b.tick(T0 + timedelta(seconds=70)) == []
    assert b.timers.due(NODES, T0 + timedelta(hours=1)) == []  # decided: nothing more is due


def test_an_entity_is_due_again_once_an_event_changed_it() -> None:
    """A state changed since the last tick may hold a condition already due (an event that
    arrived late): it is ticked although its instant is older than that tick."""
    timed, _ = engines({"heartbeat_lost": {"limit_s": 60}})
    b = Brain(timed)
    b.handle(heartbeat("n1", at_s=0))
    state = b.nodes["n1"]
    timers = Timers(timed)
    timers.changed(NODES, "n1", state)
    assert timers.due(NODES, T0 + timedelta(seconds=59)) == []
    now = T0 + timedelta(seconds=100)
    assert timers.due(NODES, now) == ["n1"]
    timers.ticked(NODES, "n1", state, now)
    assert timers.due(NODES, now + timedelta(seconds=5)) == []  # its instant was seen
    timers.changed(NODES, "n1", state)
    assert timers.due(NODES, now + timedelta(seconds=10)) == ["n1"]


def test_a_tick_rule_without_due_ticks_every_entity_every_time() -> None:
    _, swept = engines({"heartbeat_lost": {"limit_s": 60}})
    b = Brain(swept)
    b.handle(heartbeat("n1", at_s=0))
    timers = Timers(swept)
    timers.changed(NODES, "n1", b.nodes["n1"])
    for s in (5, 10, 15):
        now = T0 + timedelta(seconds=s)
        assert timers.due(NODES, now) == ["n1"]
        timers.ticked(NODES, "n1", b.nodes["n1"], now)


def test_a_heap_rescheduled_for_ever_stays_bounded_and_still_right() -> None:
    """A live worker never stops: each reschedule leaves a stale heap entry behind, and those
    must not pile up (here one node's heartbeats move its instant 5,000 times)."""
    timed, _ = engines({"heartbeat_lost": {"limit_s": 60}})
    b = Brain(timed)
    timers = Timers(timed)
    for s in range(5_000):
        b.handle(heartbeat("n1", at_s=s))
        timers.changed(NODES, "n1", b.nodes["n1"])
    assert len(timers._heap[NODES.table]) <= 2 + STALE_SLACK + 1
    assert timers.due(NODES, T0 + timedelta(seconds=4_999 + 59)) == []
    assert timers.due(NODES, T0 + timedelta(seconds=4_999 + 60)) == ["n1"]


def test_a_job_is_due_only_while_it_runs_and_a_node_always() -> None:
    engine, _ = engines(CONFIGS[0])
    brain = Brain(engine)
    brain.handle(running("j1", at_s=0))
    brain.handle(heartbeat("n1", at_s=0))
    assert due_instants(engine, JOBS, brain.jobs["j1"])  # its checkpoint stall's
    assert due_instants(engine, NODES, brain.nodes["n1"])  # its silence's
    brain.handle(ended("j1", at_s=60))
    assert due_instants(engine, JOBS, brain.jobs["j1"]) == []
