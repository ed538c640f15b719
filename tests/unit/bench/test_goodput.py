"""`bench goodput`'s own arithmetic: the speed-up that gives the period its interruptions, the
repair scaled with it, and a quarantine judged against the truth when it was decided."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from actions.adapters.memory import read_unhealthy
from centrality.bench.goodput import Options
from centrality.bench.goodput_loop import Fleet, Period
from centrality.bench.goodput_whatif import pooled
from collectors.simulate.model import ClusterModel
from collectors.simulate.taxonomy import LLAMA3_405B
from schemas.envelope import Event
from schemas.runtime.settings import KafkaSettings

START = datetime(2026, 3, 1, tzinfo=UTC)


def options(**kw: float) -> Options:
    base = {"nodes": 32, "gpus": 8, "jobs": 8, "hours": 20.0, "interval_s": 300.0}
    base |= {"interruptions": 40.0, "response_s": 1800.0, "repair_s": 86_400.0, "seed": 1}
    return Options(**(base | kw))  # type: ignore[arg-type]


def test_the_acceleration_gives_the_period_its_interruptions_and_shortens_repairs_alike() -> None:
    opts = options()
    expected = LLAMA3_405B.expected(256, 20 * 3600, opts.acceleration)
    assert expected == pytest.approx(40.0)
    assert opts.acceleration == pytest.approx(395.9, abs=0.1)
    # Out-of-service share as on Llama 3's fleet: faults x repair per node, unchanged.
    assert opts.node_out_s(86_400.0) * opts.acceleration == pytest.approx(86_400.0)
    sim = opts.sim("auto")
    assert sim.repair_s == pytest.approx(86_400.0 / opts.acceleration)
    assert sim.taxonomy == LLAMA3_405B.name and sim.horizon_s == 20 * 3600


def test_a_quarantine_is_right_if_the_node_was_faulty_when_it_was_decided() -> None:
    fleet = Fleet(ClusterModel(options(nodes=2, jobs=1).sim("auto"), START), automated=True)
    fleet.faulty = [(0.0, frozenset()), (300.0, frozenset({"auto-0001"})), (600.0, frozenset())]
    at = [START + timedelta(seconds=s) for s in (299, 300, 599, 600)]
    assert [fleet.was_faulty("auto-0001", t) for t in at] == [False, True, True, False]
    assert not fleet.was_faulty("auto-0000", at[1])
    assert not fleet.was_faulty("auto-0001", START - timedelta(seconds=1))


def test_a_benchmark_hears_of_a_fault_before_the_workers_do(tmp_path: Path) -> None:
    """The truth was told after the tick's events were sent: a drain and its benchmark decided
    on them could run first, pass the faulty node and release it, and the restart went back to
    it (the rules-acting world of one seed lost 180.7 GPU-h in one run, 141.4 in the next)."""
    truth = tmp_path / "unhealthy.json"
    fleet = Fleet(ClusterModel(options(nodes=2, jobs=1).sim("auto"), START), automated=True)
    heard: list[dict[str, str]] = []

    class Emitter:
        async def emit_batch(self, batch: list[Event]) -> None:
            heard.append(read_unhealthy(truth))

    quiet: Any = None  # no lags are sampled: nothing settles here
    period = Period(
        KafkaSettings(), [fleet], cast(Any, Emitter()), quiet, truth, response_s=0, repair_s=0
    )
    fleet.model.broken["auto-0001"] = LLAMA3_405B.causes[0]
    asyncio.run(period._emit(fleet, fleet.model.tick(0.0)))
    assert heard and all("auto-0001" in told for told in heard)


def test_the_calibration_over_several_seeds_is_their_sum() -> None:
    one = {"candidate": "*.enabled=false", "gpu_h": 300.0, "measured_gpu_h": 200.0}
    two = {"candidate": "*.enabled=false", "gpu_h": 100.0, "measured_gpu_h": 200.0}
    [summed] = pooled([[one], [two]])
    assert summed == {
        "candidate": "*.enabled=false",
        "runs": 2,
        "gpu_h": 400.0,
        "measured_gpu_h": 400.0,
        "ratio": 1.0,
        "agrees": True,
    }
    [apart] = pooled([[one]])
    assert apart["ratio"] == 1.5 and not apart["agrees"]
