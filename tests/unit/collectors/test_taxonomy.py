"""The simulator draws interruptions from the Llama 3 table of causes, and each cause shows what
it really shows: an XID, an ECC count, a failing check, a silent node, a job's own failure."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime

import pytest

from collectors.simulate.config import SimConfig
from collectors.simulate.model import ClusterModel
from collectors.simulate.taxonomy import LLAMA3_405B, Cause, PlannedFault, draw
from schemas.envelope import Event
from schemas.events import JobExited, JobStateChanged, LogSignalDetected

START = datetime(2026, 3, 1, tzinfo=UTC)


def cause(component: str) -> Cause:
    return next(c for c in LLAMA3_405B.causes if c.component == component)


def test_the_table_is_the_paper_s() -> None:
    assert LLAMA3_405B.interruptions == 419 and len(LLAMA3_405B.causes) == 18
    # At the paper's fleet and span its rate gives back its count; scaled to ours, ours.
    assert LLAMA3_405B.expected(16_384, 54 * 86_400) == pytest.approx(419)
    assert LLAMA3_405B.expected(512, 86_400, acceleration=100) == pytest.approx(
        419 * 512 / 16_384 / 54 * 100
    )


def test_causes_are_drawn_in_the_table_s_proportions() -> None:
    faults = draw(LLAMA3_405B, 1000, 8, 54 * 86_400, 2.0, random.Random(1))
    assert abs(len(faults) - 2 * LLAMA3_405B.expected(8000, 54 * 86_400)) < 4 * 14  # 4 sigma
    drawn = Counter(f.cause.component for f in faults)
    assert drawn.most_common(2)[0][0] == "Faulty GPU"
    share = drawn["GPU HBM3 Memory"] / len(faults)
    assert share == pytest.approx(72 / 419, abs=0.04)
    again = draw(LLAMA3_405B, 1000, 8, 54 * 86_400, 2.0, random.Random(1))
    assert again == faults  # a seed draws the same faults


def run(model: ClusterModel, until_s: float, step_s: float = 10.0) -> list[Event]:
    out, t = [], model.now_s
    while t <= until_s:
        out += model.tick(t)
        t += step_s
    return out


def one_job_on_node_0(**config: object) -> ClusterModel:
    settings = SimConfig(
        nodes=2,
        jobs=1,
        nodes_per_job=(1, 1),
        job_duration_s=(3600.0, 3600.0),
        checkpoint_every_s=300.0,
        taxonomy="llama3-405b",
        acceleration=1e-9,  # no draws: the test places its faults
        **config,  # type: ignore[arg-type]
    )
    return ClusterModel(settings, START)


def strike(model: ClusterModel, component: str, at_s: float, node: int = 0) -> None:
    model.planned = [PlannedFault(at_s, cause(component), node, 3)]


def test_a_faulty_gpu_shows_its_xid_and_takes_the_job_down_until_someone_requeues_it() -> None:
    model = one_job_on_node_0()
    strike(model, "Faulty GPU", 700)
    events = run(model, 800)
    xids = [e for e in events if e.type == "GpuXidObserved"]
    assert [(e.subject, e.payload.xid, e.payload.gpu) for e in xids] == [("node-0000", 79, 3)]  # type: ignore[attr-defined]
    [said] = [e for e in events if isinstance(e, LogSignalDetected)]
    assert said.payload.signal == "CUDA_ERROR"
    [exited] = [e for e in events if isinstance(e, JobExited)]
    assert (exited.payload.state, exited.payload.attempt) == ("FAILED", 1)
    assert exited.payload.reason == "Faulty GPU" and model.failed and not model.jobs
    assert model.unhealthy() == {"node-0000": "Faulty GPU: benchmark below thresholds"}
    # Requeued, it comes back as attempt 2 from its checkpoint at 600 s (on the other node, the
    # first one free in order being the faulty one... which the scheduler still offers).
    requeued = model.requeue(next(iter(model.failed)))
    running = [e for e in requeued if e.type == "JobStateChanged" and e.payload.state == "RUNNING"]  # type: ignore[attr-defined]
    assert running and running[0].payload.attempt == 2  # type: ignore[attr-defined]
    job = next(iter(model.jobs.values()))
    assert job.base_s == 600.0
    # Placed on the faulty node, it fails again a little later, showing the fault again on
    # the same GPU.
    again = run(model, 1000)
    exits = [e for e in again if isinstance(e, JobExited)]
    assert [(e.payload.attempt, e.payload.reason) for e in exits] == [(2, "Faulty GPU")]
    assert [e.payload.gpu for e in again if e.type == "GpuXidObserved"] == [3]  # type: ignore[attr-defined]


def test_a_requeue_that_excludes_the_faulty_node_runs_elsewhere_and_holds() -> None:
    model = one_job_on_node_0()
    strike(model, "Faulty GPU", 700)
    run(model, 800)
    requeued = model.requeue(next(iter(model.failed)), avoid=("node-0000",))
    [running] = [
        e for e in requeued if isinstance(e, JobStateChanged) and e.payload.state == "RUNNING"
    ]
    assert running.payload.nodes == ("node-0001",)
    assert not [e for e in run(model, 1500) if isinstance(e, JobExited)]


def test_hbm3_shows_an_ecc_count_and_an_xid_48() -> None:
    model = one_job_on_node_0()
    strike(model, "GPU HBM3 Memory", 100)
    events = run(model, 130)
    samples = [
        e.payload.ecc_double_bit  # type: ignore[attr-defined]
        for e in events
        if e.type == "GpuSampled" and e.subject == "node-0000" and e.payload.gpu == 3  # type: ignore[attr-defined]
    ]
    assert samples[0] == 0 and samples[-1] == 1
    assert [e.payload.xid for e in events if e.type == "GpuXidObserved"] == [48]  # type: ignore[attr-defined]


def test_a_nic_keeps_failing_its_check_until_repaired() -> None:
    model = one_job_on_node_0(check_resend_s=300.0)
    strike(model, "NIC", 100)
    events = run(model, 800)
    checks = [e for e in events if e.type == "NodeHealthChecked"]
    assert [(e.payload.check, e.payload.status) for e in checks] == [("ib_port", "CRITICAL")] * 3  # type: ignore[attr-defined]
    model.repair("node-0000")
    assert not [e for e in run(model, 1500) if e.type == "NodeHealthChecked"]


def test_a_lost_node_goes_silent_and_comes_back_repaired() -> None:
    model = one_job_on_node_0(repair_s=600.0)
    strike(model, "Power Supply", 100)
    events = run(model, 690)
    said = [(e.subject, e.payload.state) for e in events if e.type == "NodeStateObserved"]  # type: ignore[attr-defined]
    assert said == [("node-0000", "DOWN")]
    beats = [
        e.occurred_at for e in events if e.type == "NodeHeartbeat" and e.subject == "node-0000"
    ]
    assert max(beats) < START.replace(second=40, minute=1)  # nothing after 100 s
    [exited] = [e for e in events if isinstance(e, JobExited)]
    assert exited.payload.raw_state == "NODE_FAIL"
    back = run(model, 800)
    assert ("node-0000", "AVAILABLE") in [
        (e.subject, e.payload.state)
        for e in back
        if e.type == "NodeStateObserved"  # type: ignore[attr-defined]
    ]
    assert not model.broken


def test_a_software_bug_fails_the_job_and_leaves_the_node_sound() -> None:
    model = one_job_on_node_0()
    strike(model, "Software Bug", 100)
    events = run(model, 120)
    [said] = [e for e in events if isinstance(e, LogSignalDetected)]
    assert said.payload.signal == "TRACEBACK" and not model.broken
    assert not [e for e in events if e.type in ("GpuXidObserved", "NodeHealthChecked")]
