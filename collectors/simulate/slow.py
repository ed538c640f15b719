"""Slow but alive nodes ("fail-slow"): spells in which a node's GPUs throttle and its ranks
make every job there wait, and the per-host step times a trainer's log shows of them.

A spell's node, start, slowness and length are drawn up front from a generator of their own,
so every fleet simulated from one seed meets the same spells whatever its rules do, and a seed
without spells tells the story it always told.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from collectors.simulate.config import SimConfig
from schemas.events.steps import StepTimesObservedPayload

# The clock-throttle reasons NVML gives for a GPU slowed by its hardware (not by its own load).
THROTTLES = ("HwThermalSlowdown", "HwSlowdown", "HwPowerBrakeSlowdown")
# Work is counted in seconds at a healthy pace (`SimJob.progress_s`) and a job's step is that
# count, so a healthy host takes a second a step.
STEP_S = 1.0


@dataclass(frozen=True)
class SlowSpell:
    at_s: float
    node: str
    factor: float  # the node's step time, times a healthy host's
    until_s: float
    reason: str  # the throttle reason its GPUs report

    @property
    def said(self) -> str:
        hours = (self.until_s - self.at_s) / 3600
        return f"slow: steps x{self.factor:.2f} for {hours:.2f} h ({self.reason})"


def draw(config: SimConfig, names: list[str], rng: random.Random) -> list[SlowSpell]:
    """`config.slow_nodes` spells over the horizon, in the order they begin."""
    lo, hi = config.slow_duration_s
    spells = []
    for _ in range(config.slow_nodes):
        at = rng.uniform(0.0, config.horizon_s)
        node = rng.choice(names)
        factor = rng.uniform(*config.slow_factor)
        lasts = math.exp(rng.uniform(math.log(lo), math.log(hi)))
        spells.append(SlowSpell(at, node, factor, at + lasts, rng.choice(THROTTLES)))
    return sorted(spells, key=lambda s: s.at_s)


def step_times(
    node: str, rank: int, steps: int, last_step: int, factor: float, rng: random.Random
) -> StepTimesObservedPayload:
    """One host's summary of its last `steps` steps: a healthy pace with a little noise, times
    `factor` on a slow host (the others wait for it, which their own times do not show)."""
    median = STEP_S * rng.uniform(0.97, 1.03) * factor
    return StepTimesObservedPayload(
        node=node,
        rank=rank,
        steps=steps,
        median_s=round(median, 4),
        max_s=round(median * rng.uniform(1.02, 1.15), 4),
        last_step=last_step,
    )
