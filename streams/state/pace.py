"""How fast a job goes, host by host: its ranks' step times, its checkpoints' cadence, and what
its nodes say holds them back. What the `slow_node` rule weighs; held in the job's state.

Two ways a slow host shows in step times. Where ranks time their own work, the slow host's are
longer than the other hosts' (`slow_since`). In synchronous training every rank waits for the
slowest at each collective, so all log the same time: then the job as a whole goes slower than
its best pace this attempt (`pace_s` against `TrainingJob.pace_best_s`), and the node to blame
is the one whose GPUs say they are held back.

Bounded like every state (`streams.state.bounds`): a few summaries per host, a few checkpoint
times, the hosts of one attempt (a new attempt starts afresh: its hosts are others, or restarted).
"""

from __future__ import annotations

import itertools
import uuid
from datetime import datetime
from statistics import median

from pydantic import BaseModel, ConfigDict

from schemas.events.steps import StepTimesObservedPayload
from schemas.events.triggers import Timing

SUMMARIES_KEPT = 6  # per host: a few intervals show a host slow for a while, not a blip
HOSTS_KEPT = 4096
CHECKPOINTS_KEPT = 8
SIGNS_KEPT = 8  # of what one node says, for people
# A host this much slower than the others is behind; rules ask more of it (`ratio_min`), and
# time how long from when it fell behind.
BEHIND = 1.1


class HostSteps(BaseModel):
    """A host's recent step-time summaries (when, the median of its slowest rank then), and
    since when it has been `BEHIND` the job's other hosts, unbroken."""

    model_config = ConfigDict(frozen=True)

    summaries: tuple[tuple[datetime, float], ...] = ()
    behind_since: datetime | None = None

    @property
    def latest_s(self) -> float:
        return self.summaries[-1][1]


class NodeSlow(BaseModel):
    """What a node running the job says holds it back (`streams.state.slowness`)."""

    model_config = ConfigDict(frozen=True)

    signs: tuple[str, ...]
    since: datetime
    slowdown: float | None = None


class SlowPlan(BaseModel):
    """A node to take out at the job's next checkpoint (asked for, or at its cadence): the
    brain's own decision, folded back, so the checkpoint that follows finds it."""

    model_config = ConfigDict(frozen=True)

    timing: Timing
    at: datetime
    trigger_id: uuid.UUID


def steps_after(
    steps: dict[str, HostSteps], p: StepTimesObservedPayload, at: datetime, best_s: float | None
) -> dict[str, HostSteps] | None:
    """The hosts' summaries with one more (`best_s`: the job's best pace so far). A host's ranks
    report apart and the host goes at its slowest rank's pace: a summary of the same instant
    keeps the larger median."""
    host = steps.get(p.node)
    if host is None and len(steps) >= HOSTS_KEPT:
        return None
    kept = host.summaries if host is not None else ()
    if kept and kept[-1][0] == at:
        if kept[-1][1] >= p.median_s:
            return None
        kept = kept[:-1]
    elif kept and kept[-1][0] > at:
        return None  # late: the newer summary stands
    summaries = (*kept, (at, p.median_s))[-SUMMARIES_KEPT:]
    since = None
    if _behind(steps, p.node, p.median_s, best_s):
        since = (host.behind_since if host is not None else None) or at
    return {**steps, p.node: HostSteps(summaries=summaries, behind_since=since)}


def _behind(steps: dict[str, HostSteps], node: str, median_s: float, best_s: float | None) -> bool:
    """`median_s` is `BEHIND` the other hosts'. Most summaries are near the job's best pace and
    need no look at the others (a thousand-host job sends thousands a minute)."""
    if best_s is not None and median_s < BEHIND * best_s:
        return False
    base = others_median_s(steps, node)
    return base is not None and median_s >= BEHIND * base


def others_median_s(steps: dict[str, HostSteps], host: str) -> float | None:
    """The median of the other hosts' latest step times: what the job goes at without `host`."""
    others = [h.latest_s for name, h in steps.items() if name != host]
    return median(others) if others else None


def slow_since(
    steps: dict[str, HostSteps], host: str, ratio_min: float
) -> tuple[datetime, float] | None:
    """Since when `host` has been behind the other hosts, and its latest ratio to them, when
    that is `ratio_min` or more; None otherwise."""
    mine = steps.get(host)
    if mine is None or mine.behind_since is None:
        return None
    base = others_median_s(steps, host)
    if base is None or mine.latest_s < ratio_min * base:
        return None
    return mine.behind_since, round(mine.latest_s / base, 3)


def pace_s(steps: dict[str, HostSteps]) -> float | None:
    """The job's step time now: the median of its hosts' latest."""
    return median(h.latest_s for h in steps.values()) if steps else None


def cadence_s(checkpoints: tuple[datetime, ...]) -> float | None:
    """The job's checkpoint interval as it saves them (the median gap); None under two."""
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(checkpoints)]
    gaps = [g for g in gaps if g > 0]
    return median(gaps) if gaps else None
