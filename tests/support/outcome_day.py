"""A simulated day whose outcomes are known: which quarantines were right, which restarts held,
which node is a lemon, and how long each remediation step took.

The decisions are the built-in rules' (through the same brain as live and replay); what the
action workers and the benchmark answered is written here, each a fixed delay after the decision
it answers, so the step timings are known too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from schemas.envelope import Event
from schemas.events import QuarantineNodes, ReleaseNodes, RestartJob, RunBenchmark, Trigger
from streams.analysis.replay.rerun import current_brain, rerun
from streams.brain.process import Brain
from streams.history.query import event_time_key
from streams.testing import (
    T0,
    benchmark,
    checkpoint,
    completed,
    ended,
    health,
    result,
    running,
    sample,
    xid,
)

H = 3600.0
DRAIN_S, BENCHMARK_S, RELEASE_S, REQUEUE_S = 5.0, 600.0, 30.0, 2.0
# Ground truth: the rule that takes each node out, and whether it was right.
CONFIRMED = {"bad-1": "fatal_xid", "flaky-1": "ecc_double_bit"}
FALSE_ALARM = {"ok-1": "repeated_health_failures"}
VERDICTS = {"bad-1": "fail", "ok-1": "pass", "flaky-1": "pass"}
LEMON = "lemon-1"
HELD, FAILED_AGAIN = "slurm/test/held", "slurm/test/again"


@dataclass
class Day:
    facts: list[Event] = field(default_factory=list)
    decisions: list[Trigger] = field(default_factory=list)

    @property
    def events(self) -> list[Event]:
        return sorted([*self.facts, *self.decisions], key=event_time_key)


def outcome_day(brain: Callable[[], Brain] = current_brain) -> Day:
    facts: list[Event] = [
        xid("bad-1", 79, at_s=1 * H),
        *(health("ok-1", "ib_port", "CRITICAL", at_s=2 * H + m * 300) for m in range(3)),
        sample("flaky-1", gpu=2, at_s=3 * H, ecc_double_bit=1),
        # flaky-1, back in service, takes a job down two hours later.
        running("slurm/test/on-flaky", 1, 4.5 * H, ("flaky-1",)),
        ended("slurm/test/on-flaky", "FAILED", 1, 5 * H, ("flaky-1",)),
        # A restart that holds: the next attempt runs two hours and completes.
        running(HELD, 1, 3 * H, ("n-1",)),
        checkpoint(100, HELD, 3.5 * H),
        ended(HELD, "FAILED", 1, 4 * H, ("n-1",)),
        running(HELD, 2, 4 * H + 60, ("n-2",)),
        completed(HELD, 6 * H),
        ended(HELD, "SUCCEEDED", 2, 6 * H + 1, ("n-2",), exit_code=0),
        # A restart that fails again five minutes in; the one after that holds.
        running(FAILED_AGAIN, 1, 5 * H, ("n-3",)),
        ended(FAILED_AGAIN, "FAILED", 1, 6 * H, ("n-3",)),
        running(FAILED_AGAIN, 2, 6 * H + 60, ("n-4",)),
        ended(FAILED_AGAIN, "FAILED", 2, 6 * H + 360, ("n-4",)),
        running(FAILED_AGAIN, 3, 6 * H + 420, ("n-5",)),
        completed(FAILED_AGAIN, 9 * H),
        ended(FAILED_AGAIN, "SUCCEEDED", 3, 9 * H + 1, ("n-5",), exit_code=0),
    ]
    facts += _lemon_and_fleet()
    day = Day(facts)
    _answer(day, brain)
    return day


def _lemon_and_fleet() -> list[Event]:
    """Six jobs fail on the lemon, two hours apart (never five in an hour on one node set); on
    twelve other nodes forty jobs run, two of them failing."""
    out: list[Event] = []
    for k in range(6):
        job, at = f"slurm/test/lemon-{k}", 8 * H + 2 * H * k
        out += [running(job, 1, at, (LEMON,)), ended(job, "FAILED", 1, at + 600, (LEMON,))]
    for k in range(40):
        job, at = f"slurm/test/fleet-{k}", 7 * H + 300 * k
        nodes = (f"f-{k % 12}", f"f-{(k + 1) % 12}")
        state = "FAILED" if k in (7, 29) else "SUCCEEDED"
        out += [running(job, 1, at, nodes)]
        if state == "SUCCEEDED":
            out.append(completed(job, at + 1700))
        out.append(
            ended(job, state, 1, at + 1800, nodes, exit_code=0 if state == "SUCCEEDED" else 1)
        )
    return out


def _answer(day: Day, brain: Callable[[], Brain]) -> None:
    """Decide, answer each decision as workers and benchmarks would, until nothing new is
    decided: the story of each node goes on from what it was answered."""
    answered: set[str] = set()
    while True:
        decided = rerun(day.facts, brain(), 5.0)
        fresh = [t for t in decided if str(t.event_id) not in answered]
        if not fresh:
            day.decisions = decided
            return
        for t in fresh:
            answered.add(str(t.event_id))
            day.facts += _answers(t)


def _answers(t: Trigger) -> list[Event]:
    at_s = (t.occurred_at - T0).total_seconds()
    if isinstance(t, QuarantineNodes):
        return [result(t, at_s + DRAIN_S)]
    if isinstance(t, RunBenchmark):
        [node] = t.payload.nodes
        return [result(t, at_s + 1), benchmark(node, VERDICTS[node], at_s + BENCHMARK_S, t)]
    if isinstance(t, ReleaseNodes):
        return [result(t, at_s + RELEASE_S)]
    if isinstance(t, RestartJob):
        return [result(t, at_s + REQUEUE_S)]
    return []
