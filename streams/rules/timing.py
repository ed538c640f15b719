"""When to take a slow node out from under a running job: the expected GPU-hours of each way.

A job runs at its slowest member's pace. Taking the node out mid-step throws away every step since
the last checkpoint; waiting for the next checkpoint costs the slowdown meanwhile; asking the job
for a checkpoint now costs one extra write; leaving the node costs the slowdown for as long as it
is expected to last. Every way but leaving also pays a restart (requeue, start, load). Pure: the
`slow_node` rule gives the figures it read from the job's state and its config.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.events.triggers import Timing, TimingChoice, TimingCosts

# When two ways cost the same, the one that ends the slowdown sooner.
PREFERENCE: tuple[TimingChoice, ...] = ("now", "ask", "at_checkpoint", "leave")


@dataclass(frozen=True)
class Costs:
    gpus: int
    slowdown: float  # the job's step time with the node over without it (>= 1)
    since_checkpoint_s: float  # wall time since the last checkpoint (or the attempt's start)
    cadence_s: float | None  # the job's checkpoint interval; None: not known yet
    restart_s: float
    write_s: float
    leave_s: float  # how long leaving it is priced over
    ask: bool  # the job honours the checkpoint hook

    @property
    def to_checkpoint_s(self) -> float | None:
        """Wall time to the next checkpoint: the interval's rest, stretched by the slowdown.
        None when no cadence is known, or the checkpoint is so overdue it says nothing."""
        if self.cadence_s is None or self.since_checkpoint_s > 2 * self.cadence_s:
            return None
        return max(0.0, self.cadence_s - self.since_checkpoint_s) * self.slowdown

    def gpu_h(self) -> dict[TimingChoice, float]:
        """The expected GPU-hours of each way open to this job."""
        waste = 1.0 - 1.0 / self.slowdown  # of each wall second on the slow node
        per_s = self.gpus / 3600.0
        out: dict[TimingChoice, float] = {
            "now": per_s * (self.since_checkpoint_s + self.restart_s),
            "leave": per_s * self.leave_s * waste,
        }
        wait = self.to_checkpoint_s
        if wait is not None:
            out["at_checkpoint"] = per_s * (wait * waste + self.restart_s)
        if self.ask:
            out["ask"] = per_s * (self.write_s + self.restart_s)
        return {k: round(v, 3) for k, v in out.items()}


def choose(costs: Costs, job_id: str, forced: TimingChoice | None = None) -> Timing:
    """The cheapest way, or `forced` where the job allows it (a forced way it does not allow
    falls to the cheapest that acts: asking without the hook, waiting without a cadence)."""
    figures = costs.gpu_h()
    if forced is not None and forced in figures:
        chosen = forced
    else:
        open_ = [c for c in PREFERENCE if c in figures and (forced is None or c != "leave")]
        chosen = min(open_, key=lambda c: (figures[c], PREFERENCE.index(c)))
    saved = round(figures["now"] - figures[chosen], 3)
    return Timing(chosen=chosen, job_id=job_id, gpu_h=TimingCosts(**figures), saved_gpu_h=saved)


def said(timing: Timing, costs: Costs) -> str:
    """The choice and its figures, for the decision's reason."""
    words = {
        "now": "now",
        "at_checkpoint": "at the next checkpoint",
        "ask": "after a checkpoint asked for now",
        "leave": "leave it",
    }
    figures = timing.gpu_h.of()
    wait = costs.to_checkpoint_s
    when = f" (in ~{wait / 60:.0f} min)" if timing.chosen == "at_checkpoint" and wait else ""
    others = ", ".join(
        f"{words[c]} {figures[c]:,.1f}" for c in PREFERENCE if c in figures and c != timing.chosen
    )
    return (
        f"{words[timing.chosen]}{when}: {figures[timing.chosen]:,.1f} GPU-h expected "
        f"({costs.slowdown:.2f}x slower, {costs.gpus} GPUs; against {others})"
    )
