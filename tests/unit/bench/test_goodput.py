"""`bench goodput`'s own arithmetic: the speed-up that gives the period its interruptions, the
repair scaled with it, and a quarantine judged against the truth when it was decided."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from centrality.bench.goodput import Options
from centrality.bench.goodput_loop import Fleet
from collectors.simulate.model import ClusterModel
from collectors.simulate.taxonomy import LLAMA3_405B

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
