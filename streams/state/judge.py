"""A benchmark's verdict, judged against the hardware: the runner's own verdict (its thresholds),
then the node's GPU model's datasheet (`schemas.gpu_specs`), then the median of the model's
recent passing benchmarks on other nodes (the `fleet` baseline the action worker read from
history and put in the result). All of it is in the event: live and replay judge alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from schemas.events.actions import BenchmarkCompletedPayload, FleetBaseline
from schemas.gpu_specs import spec_of

# Below this share of its peers' median a node fails (the runner's --fleet-fraction sets it).
FLEET_FRACTION = 0.85
FLEET_PEERS_MIN = 3  # fewer peers make no baseline: one slow peer would set it
# A node that passed, yet below this share of its peers' median: slow evidence, weighed by
# `slow_node` only beside its jobs' step times (streams.state.slowness, BENCHMARK).
FLEET_SLOW_SHARE = 0.95


class Figures(BaseModel):
    """One node's benchmark, as the fleet compares them: its slowest GPU, and the all-reduce."""

    model_config = ConfigDict(frozen=True)

    matmul_tflops: float | None = None
    memory_gbps: float | None = None
    busbw_gbps: float | None = None


def figures(p: BenchmarkCompletedPayload) -> Figures:
    tflops = [g.matmul_tflops for g in p.gpus if g.matmul_tflops is not None]
    memory = [g.memory_bandwidth_gbps for g in p.gpus if g.memory_bandwidth_gbps is not None]
    return Figures(
        matmul_tflops=min(tflops, default=None),
        memory_gbps=min(memory, default=None),
        busbw_gbps=p.nccl_busbw_gbps,
    )


def model_of(p: BenchmarkCompletedPayload, known: str | None) -> str | None:
    """The node's GPU model: as its agent reported it, else as the runner saw it."""
    return known or next((g.model for g in p.gpus if g.model), None)


@dataclass(frozen=True)
class Judged:
    verdict: str
    reasons: tuple[str, ...]  # why it is not a pass
    basis: str  # what it was judged against


def _without(fleet: FleetBaseline | None, model: str | None, label: str) -> str | None:
    """Why the fleet's baseline does not judge this node; None when it does."""
    if fleet is None:
        return "none was read"
    if fleet.unavailable is not None:
        return fleet.unavailable
    if model is None:
        return "the node's GPU model is not known"
    if fleet.model is None or fleet.model.casefold() != model.casefold():
        return f"its peers are {fleet.model}, the node is {model}"
    if fleet.peers < FLEET_PEERS_MIN:
        days = fleet.window_s / 86400
        return f"{fleet.peers} {label} peers passed within {days:g} days (< {FLEET_PEERS_MIN})"
    return None


def judge(p: BenchmarkCompletedPayload, model: str | None) -> Judged:
    """The verdict: the runner's, unless a pass falls short of the datasheet or the fleet."""
    spec = spec_of(model)
    if spec is None:
        named = model or "not reported"
        basis = f"GPU model {named} has no datasheet entry: runner thresholds only"
    else:
        basis = f"runner thresholds and the {spec.label} datasheet"
    if p.verdict != "pass":
        return Judged(p.verdict, p.reasons, basis)
    label = spec.label if spec else str(model)
    fleet = p.fleet
    without = _without(fleet, model, label)
    if fleet is not None and without is None:
        basis += f" and the median of {fleet.peers} {label} peers"
    else:
        basis += f"; no fleet baseline: {without}"
    reasons: list[str] = []
    if spec is not None:
        for g in p.gpus:
            if g.matmul_tflops is not None and g.matmul_tflops < spec.min_tflops:
                reasons.append(
                    f"gpu {g.gpu}: matmul {g.matmul_tflops:.1f} TFLOP/s < {spec.min_tflops:.0f} "
                    f"({spec.matmul_floor:.0%} of the {spec.label} datasheet's "
                    f"{spec.matmul_tflops:g})"
                )
            memory = g.memory_bandwidth_gbps
            if memory is not None and memory < spec.min_memory_gbps:
                reasons.append(
                    f"gpu {g.gpu}: memory {memory:.0f} GB/s < {spec.min_memory_gbps:.0f} "
                    f"({spec.memory_floor:.0%} of the {spec.label} datasheet's "
                    f"{spec.memory_gbps:g})"
                )
    if fleet is not None and without is None:
        share = p.thresholds.get("fleet_fraction", FLEET_FRACTION)
        for what, value, median, unit in _against(figures(p), fleet):
            if value < share * median:
                reasons.append(
                    f"{what} {value:.1f} {unit} = {value / median:.0%} of the median "
                    f"{median:.1f} of {fleet.peers} peers (< {share:.0%})"
                )
    return Judged("fail" if reasons else "pass", tuple(reasons), basis)


def behind_fleet(p: BenchmarkCompletedPayload, model: str | None) -> tuple[str, float] | None:
    """A node's figure furthest behind its model's fleet median, in words, and the median over
    it; None when none is under `FLEET_SLOW_SHARE` of it, or no baseline judges the node."""
    fleet = p.fleet
    if fleet is None or _without(fleet, model, model or "?") is not None:
        return None
    worst: tuple[str, float] | None = None
    for what, value, median, unit in _against(figures(p), fleet):
        if (
            not value
            or value >= FLEET_SLOW_SHARE * median
            or (worst and median / value <= worst[1])
        ):
            continue
        said = (
            f"benchmark: {what} {value:.1f} {unit} = {value / median:.0%} of the median "
            f"{median:.1f} of {fleet.peers} peers"
        )
        worst = (said, round(median / value, 3))
    return worst


def _against(mine: Figures, fleet: FleetBaseline) -> Iterator[tuple[str, float, float, str]]:
    """Each figure the node and its fleet both have: what, the node's, the median, the unit."""
    for what, value, median, unit in (
        ("slowest GPU's matmul", mine.matmul_tflops, fleet.matmul_tflops, "TFLOP/s"),
        ("slowest GPU's memory", mine.memory_gbps, fleet.memory_gbps, "GB/s"),
        ("NCCL bus bandwidth", mine.busbw_gbps, fleet.busbw_gbps, "GB/s"),
    ):
        if value is not None and median is not None:
            yield what, value, median, unit
