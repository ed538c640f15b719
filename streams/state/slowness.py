"""A node slow but alive: what its GPUs' own samples say holds it back.

A sign is kept per kind and GPU, from the first sample that showed it to the last. Throttles and
low clocks end with the first sample of that GPU without them (the throttle lifted, the clocks
came back). Corrected errors and row remaps have no such end: a burst of them keeps its sign for
`STICKY_S` after the last rise.

What a sign means for a job running there is the job's to weigh, with its ranks' step times
(`streams/rules/builtin/slow_node.py`): a throttled GPU whose host steps as fast as the others
costs the job nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from schemas.events.gpus import GpuSampledPayload
from schemas.gpu_specs import spec_of

# NVML's clock-throttle reasons that hold a busy GPU back; the others (idle, application clocks,
# a software power cap a busy GPU sits at by design, sync boost) are normal.
HOLDING_BACK = {
    "HwSlowdown": "throttle",
    "HwThermalSlowdown": "thermal",
    "SwThermalSlowdown": "thermal",
    "HwPowerBrakeSlowdown": "power",
}
# A busy GPU below this share of its model's maximum SM clock is held back whatever NVML says.
CLOCK_SHARE = 0.7
BUSY_PCT = 50.0
# Corrected ECC errors risen by this many in one sample (a burst, not the slow count of a
# healthy HBM stack), and any new row remap: memory degrading; each kept for an hour.
CORRECTED_BURST = 100
STICKY_S = 3600.0
STICKY = frozenset({"corrected_errors", "row_remaps"})
# A benchmark that passed behind its fleet's median (streams.state.judge.behind_fleet): kept
# until the node's next benchmark, for the node as a whole (no GPU's samples end it). It starts no
# spell of its own: it only makes a host that lags its job's other hosts count sooner.
BENCHMARK = "benchmark"
WHOLE_NODE = -1
BENCHMARK_KEY = f"{BENCHMARK}:{WHOLE_NODE}"
RISES_SEEN = frozenset({"ecc_single_bit", "remapped_rows_correctable"})  # counters read here
SIGNS_KEPT = 64


class SlowSign(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: str  # throttle, thermal, power, clocks, corrected_errors, row_remaps, benchmark
    gpu: int  # WHOLE_NODE for a benchmark
    since: datetime
    at: datetime  # the last sample that showed it
    said: str  # for people: "GPU 3 HwThermalSlowdown at 1,100 of 1,980 MHz"
    slowdown: float | None = None  # the model's max clock over this one's, where both are known

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.gpu}"


def seen(
    p: GpuSampledPayload, rises: dict[str, int], model: str | None
) -> dict[str, tuple[str, float | None]]:
    """The kinds of sign one sample shows (`rises`: how far its counters rose since the last),
    each with its words and slowdown."""
    found: dict[str, tuple[str, float | None]] = {}
    slowdown = _slowdown(p, model)
    clocks = "" if slowdown is None else f" at {p.sm_clock_mhz:,} of {_top(model):,} MHz"
    for reason in p.throttle_reasons:
        kind = HOLDING_BACK.get(reason)
        if kind is not None:
            found[kind] = (f"GPU {p.gpu} {reason}{clocks}", slowdown)
    if slowdown is not None and not found and slowdown >= 1 / CLOCK_SHARE:
        found["clocks"] = (f"GPU {p.gpu} clocks{clocks}", slowdown)
    single = rises.get("ecc_single_bit", 0)
    if single >= CORRECTED_BURST:
        found["corrected_errors"] = (f"GPU {p.gpu} {single:,} corrected ECC errors", None)
    remapped = rises.get("remapped_rows_correctable", 0)
    if remapped:
        found["row_remaps"] = (f"GPU {p.gpu} {remapped:,} rows remapped", None)
    return found


_TOPS: dict[str | None, int | None] = {}  # a fleet's few model names: asked by every sample


def _top(model: str | None) -> int | None:
    if model not in _TOPS:
        spec = spec_of(model)
        _TOPS[model] = None if spec is None else spec.max_sm_clock_mhz
    return _TOPS[model]


def _slowdown(p: GpuSampledPayload, model: str | None) -> float | None:
    """The model's maximum clock over a busy GPU's (1.8 for 1,100 of 1,980 MHz); None when the
    GPU is idle, its clock or its model's maximum unknown."""
    clock = p.sm_clock_mhz
    if not clock or (p.utilization_pct is not None and p.utilization_pct < BUSY_PCT):
        return None
    top = _top(model)
    return None if top is None else round(max(1.0, top / clock), 3)


def quiet(
    signs: dict[str, SlowSign], p: GpuSampledPayload, rises: dict[str, int], model: str | None
) -> bool:
    """A sample that changes no sign: nearly every one, on a node without signs, at full clock.
    The GPU samples are the most frequent event of all: this is their whole cost here."""
    if signs or p.throttle_reasons or rises:
        return False
    clock, top = p.sm_clock_mhz, _TOPS.get(model, 0)
    if not clock or (top is not None and clock >= CLOCK_SHARE * top > 0):
        return True
    slowdown = _slowdown(p, model)
    return slowdown is None or slowdown < 1 / CLOCK_SHARE


def signs_after(
    signs: dict[str, SlowSign],
    p: GpuSampledPayload,
    rises: dict[str, int],
    model: str | None,
    at: datetime,
) -> dict[str, SlowSign] | None:
    """The node's signs after one GPU's sample; None when they are unchanged (most samples)."""
    found = seen(p, rises, model)
    mine = [s for s in signs.values() if s.gpu == p.gpu]
    if not found and not mine:
        return None
    out = {k: s for k, s in signs.items() if s.gpu != p.gpu or _lasts(s, at)}
    for kind, (said, slowdown) in found.items():
        old = signs.get(f"{kind}:{p.gpu}")
        since = old.since if old is not None else at
        sign = SlowSign(kind=kind, gpu=p.gpu, since=since, at=at, said=said, slowdown=slowdown)
        out[sign.key] = sign
    if len(out) > SIGNS_KEPT:
        out = dict(sorted(out.items(), key=lambda kv: kv[1].at)[-SIGNS_KEPT:])
    return None if out == signs else out


def _lasts(sign: SlowSign, at: datetime) -> bool:
    """A sticky sign outlives samples without it, for a while."""
    return sign.kind in STICKY and at - sign.at <= timedelta(seconds=STICKY_S)


def summary(signs: dict[str, SlowSign]) -> tuple[tuple[str, ...], datetime | None, float | None]:
    """What people read of them (worst first), since when the GPUs showed any, and the worst
    clock shortfall (a benchmark's is told, not counted: it was measured off the job)."""
    ordered = sorted(signs.values(), key=lambda s: (-(s.slowdown or 0.0), s.gpu, s.kind))
    now = [s for s in ordered if s.kind != BENCHMARK]
    slowdowns = [s.slowdown for s in now if s.slowdown is not None]
    since = min((s.since for s in now), default=None)
    return tuple(s.said for s in ordered), since, max(slowdowns, default=None)


def benchmarked(
    signs: dict[str, SlowSign], behind: tuple[str, float] | None, at: datetime
) -> dict[str, SlowSign] | None:
    """The node's signs after a benchmark that passed `behind` its fleet (None: not behind, or
    not a pass); None when they are unchanged."""
    out = {k: s for k, s in signs.items() if k != BENCHMARK_KEY}
    if behind is not None:
        said, slowdown = behind
        out[BENCHMARK_KEY] = SlowSign(
            kind=BENCHMARK, gpu=WHOLE_NODE, since=at, at=at, said=said, slowdown=slowdown
        )
    return None if out == signs else out
