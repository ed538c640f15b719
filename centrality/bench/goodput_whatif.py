"""`bench goodput`'s calibration of `centrality whatif`: the rules-acting fleet's history priced
under a candidate, beside the difference the bench measured between that fleet and one run
under the candidate itself (a person only: no rules at all).

The what-if reads only the rules-acting run's history; the other world is what it estimates.
Agreement in sign and within 25 % is issue 40's bar for believing a what-if, over runs of
several seeds (`--runs`, `pooled`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from streams.analysis.replay.clickhouse_source import ClickHouseSource, Scope
from streams.analysis.whatif.candidate import candidate
from streams.analysis.whatif.price import PricingSettings
from streams.analysis.whatif.run import warmup_for, what_if
from streams.history.client import connect
from streams.history.settings import ClickHouseSettings
from streams.settings import StreamsSettings

QUIET_S = 3.0  # the sink wrote nothing for this long: history is all there
SUNK_MAX_S = 120.0


def sunk(settings: ClickHouseSettings) -> None:
    """Until the sink has written what the workers said (its count stays put)."""
    began, last, since = time.monotonic(), -1, time.monotonic()
    while time.monotonic() - began < SUNK_MAX_S:
        with connect(settings) as client:
            count = int(client.query("SELECT count() FROM events").result_rows[0][0])
        if count != last:
            last, since = count, time.monotonic()
        elif time.monotonic() - since >= QUIET_S:
            return
        time.sleep(0.5)


def calibrate(
    settings: ClickHouseSettings,
    since: datetime,
    until: datetime,
    sets: Sequence[str],
    cluster: str,
    measured_gpu_h: float,
    pricing: PricingSettings,
) -> dict[str, Any]:
    """The what-if of `sets` over `cluster`'s history in [since, until), beside `measured_gpu_h`
    (positive: GPU-hours the candidate's world lost more)."""
    cand = candidate(StreamsSettings(), sets=sets)
    source = ClickHouseSource(settings, Scope(since, until, cluster=cluster))
    observed = until + timedelta(seconds=pricing.repair_s)  # a period ahead of the clock
    run = what_if(source, cand, warmup_for(cand), 1, observed, pricing)
    mine = run.priced
    estimate = sum(p.price.gpu_h for p in mine)
    return {
        "candidate": cand.words,
        "command": f"centrality whatif --since {since.isoformat()} --until {until.isoformat()} "
        f"--cluster {cluster} " + " ".join(f"--set '{s}'" for s in sets),
        "gpu_h": round(estimate, 1),
        "capacity_gpu_h": round(sum(p.price.capacity_gpu_h for p in mine), 1),
        "work_gpu_h": round(sum(p.price.work_gpu_h for p in mine), 1),
        "decisions_priced": len(mine),
        **_agreement(estimate, measured_gpu_h),
    }


def pooled(runs: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each candidate's calibration summed over runs of other seeds: one seed's worlds drift
    apart by chance (which node a fault strikes idle in one world runs a job in the other), so
    one run's difference is one draw."""
    out = []
    for same in zip(*runs, strict=True):
        estimate = sum(c["gpu_h"] for c in same)
        out.append(
            {
                "candidate": same[0]["candidate"],
                "runs": len(same),
                "gpu_h": round(estimate, 1),
                **_agreement(estimate, sum(c["measured_gpu_h"] for c in same)),
            }
        )
    return out


def _agreement(estimate: float, measured: float) -> dict[str, Any]:
    ratio = estimate / measured if measured else None
    return {
        "measured_gpu_h": round(measured, 1),
        "ratio": None if ratio is None else round(ratio, 3),
        "agrees": ratio is not None and 0.75 <= ratio <= 1.25,
    }
