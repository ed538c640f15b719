"""The node agent on a manual clock: every loop runs exactly when its interval says, and what
it sends is asserted exactly. Nothing here reads the host: GPUs, NVML, disks and time are the
test's."""

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pynvml
from structlog.testing import capture_logs

from collectors.agent.agent import NodeAgent
from collectors.agent.settings import AgentSettings
from collectors.gpu.backend import GpuBackend
from collectors.gpu.fake import FakeGpuBackend, Fault
from collectors.gpu.nvml import NvmlBackend
from collectors.sink import RecordingSink
from schemas.envelope import Event
from schemas.events import (
    GpuSampled,
    GpuXidObserved,
    NodeFactsObserved,
    NodeHealthChecked,
    NodeHeartbeat,
)
from schemas.events.nodes import HealthStatus
from tests.support.clock import ManualClock

BUILTIN = (
    "gpu_count",
    "fatal_xids",
    "kernel_gpu_faults",
    "ecc_double_bit",
    "disk_space",
    "nvlink_down",
)
TIB = 2**40
# Loops of an agent with GPUs: heartbeat, facts, sampling, XID wait, one per built-in check.
LOOPS_WITH_GPUS = 4 + len(BUILTIN)


class TimedSink(RecordingSink):
    """Records when (on the test's clock) each message was sent."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__()
        self.clock = clock
        self.sent_at: list[tuple[float, Event]] = []  # time, first event of the message

    async def emit_batch(self, events: Sequence[Event]) -> None:
        await super().emit_batch(events)
        self.sent_at.append((self.clock.now(), events[0]))

    def times(self, kind: type[Event]) -> list[float]:
        return [at for at, first in self.sent_at if isinstance(first, kind)]

    def timeline(self, check: str) -> list[tuple[float, HealthStatus]]:
        return [
            (at, e.payload.status)
            for at, e in self.sent_at
            if isinstance(e, NodeHealthChecked) and e.payload.check == check
        ]


def half_full(path: str) -> tuple[int, int, int]:
    return TIB, TIB // 2, TIB // 2


def settings(tmp_path: Path, **kw: object) -> AgentSettings:
    base: dict[str, object] = {
        "node": "n1",
        "cluster": "c1",
        "backend": "fake",
        "expected_gpus": 8,
        "kernel_log": "none",
        "pci_driver_dir": tmp_path / "no-sysfs",
    }
    return AgentSettings.model_validate({**base, **kw})


def fake_gpus(clock: ManualClock, *faults: str) -> FakeGpuBackend:
    parsed = tuple(Fault.parse(f) for f in faults)
    return FakeGpuBackend(8, parsed, clock=clock.now, sleep=clock.block)


def agent(
    s: AgentSettings, backend: GpuBackend, sink: RecordingSink, clock: ManualClock
) -> NodeAgent:
    return NodeAgent(s, backend, sink, clock=clock, disk_usage=half_full)


@contextlib.asynccontextmanager
async def running(a: NodeAgent, clock: ManualClock, loops: int) -> AsyncIterator[None]:
    """The agent's `run`, once all its `loops` wait on the clock; stopped on the way out."""
    stop = asyncio.Event()
    task = asyncio.create_task(a.run(stop))
    try:
        await clock.settle(loops)
        assert clock.sleeping == loops
        yield
    finally:
        stop.set()
        await clock.finish(task)


async def test_samples_heartbeats_and_checks_on_their_intervals(tmp_path: Path) -> None:
    clock = ManualClock()
    sink = TimedSink(clock)
    s = settings(tmp_path)  # defaults: samples every 10 s, heartbeat 30 s, re-send after 300 s
    async with running(agent(s, fake_gpus(clock), sink, clock), clock, LOOPS_WITH_GPUS):
        await clock.advance(60)

        assert sink.times(GpuSampled) == [0, 10, 20, 30, 40, 50, 60]
        gpu_batches = [b for b in sink.batches if isinstance(b[0], GpuSampled)]
        for batch in gpu_batches:
            assert [e.payload.gpu for e in batch] == list(range(8))
            assert {e.subject for e in batch} == {"n1"}
        sample = gpu_batches[0][0].payload
        assert sample.memory_total_bytes and sample.power_w and sample.sm_clock_mhz
        beats = sink.of_type(NodeHeartbeat)
        assert sink.times(NodeHeartbeat) == [0, 30, 60]
        [facts] = sink.of_type(NodeFactsObserved)  # at start, then hourly
        assert (facts.payload.gpu_model, facts.payload.gpu_count) == ("NVIDIA H100 80GB HBM3", 8)
        assert facts.payload.gpu_serials and len(facts.payload.gpu_serials) == 8
        assert [(b.payload.uptime_s, b.payload.gpus) for b in beats] == [(0, 8), (30, 8), (60, 8)]
        results = sink.of_type(NodeHealthChecked)
        assert {e.payload.check: e.payload.status for e in results} == dict.fromkeys(
            BUILTIN, HealthStatus.OK
        )
        assert sink.times(NodeHealthChecked) == [0] * len(BUILTIN)  # not re-sent unchanged...
        assert {e.payload.duration_ms for e in results} == {0.0}  # no time passed in checks
        disk = next(e for e in results if e.payload.check == "disk_space")
        assert disk.payload.message == "/ 50.0% used"

        await clock.advance(240)  # ...until check_resend_s (300 s) has passed
        assert sink.times(NodeHealthChecked) == [0] * len(BUILTIN) + [300] * len(BUILTIN)
        assert sink.times(GpuSampled) == [10.0 * i for i in range(31)]


async def test_xids_and_a_lost_gpu_change_checks_at_their_time_and_xids_expire(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    sink = TimedSink(clock)
    s = settings(tmp_path, xid_window_s=100)
    backend = fake_gpus(clock, "xid:5:25:79", "lost:7:90")
    async with running(agent(s, backend, sink, clock), clock, LOOPS_WITH_GPUS):
        await clock.advance(200)

    [xid] = sink.of_type(GpuXidObserved)
    assert (xid.payload.gpu, xid.payload.xid, xid.payload.channel) == (5, 79, "nvml")
    assert sink.times(GpuXidObserved) == [25]
    # fatal_xids runs every 30 s: critical at its first run after the XID, OK again once the
    # XID is older than xid_window_s (at 120 s it is 95 s old, at 150 s 125 s).
    assert sink.timeline("fatal_xids") == [
        (0, HealthStatus.OK),
        (30, HealthStatus.CRITICAL),
        (150, HealthStatus.OK),
    ]
    # gpu_count runs every 60 s; GPU 7 falls off the bus at 90 s.
    assert sink.timeline("gpu_count") == [(0, HealthStatus.OK), (120, HealthStatus.CRITICAL)]
    lost = [e for e in sink.of_type(NodeHealthChecked) if e.payload.check == "gpu_count"][-1]
    assert lost.payload.message == "7 of 8 GPUs visible"


async def test_xid_is_sent_at_once_and_turns_the_fatal_xid_check_critical(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    sink = RecordingSink()
    a = agent(settings(tmp_path), fake_gpus(clock, "xid:5:0:79"), sink, clock)
    a.open_backend()
    assert await a.poll_xids(0.5) == 1  # already due: returns without waiting
    [xid] = sink.of_type(GpuXidObserved)
    assert (xid.subject, xid.payload.gpu, xid.payload.xid) == ("n1", 5, 79)
    await a.health.run_all_once()
    fatal = [e for e in sink.of_type(NodeHealthChecked) if e.payload.check == "fatal_xids"]
    assert fatal[-1].payload.status == HealthStatus.CRITICAL
    assert "gpu5:xid79" in fatal[-1].payload.message


async def test_faults_turn_checks_critical_and_unchanged_results_are_not_resent(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    sink = RecordingSink()
    backend = fake_gpus(clock, "ecc_dbe:2:0:1", "nvlink_down:4:0:2", "lost:7:0")
    a = agent(settings(tmp_path), backend, sink, clock)
    a.open_backend()
    await a.sample()
    await a.health.run_all_once()
    await a.health.run_all_once()
    results = sink.of_type(NodeHealthChecked)
    assert Counter(e.payload.check for e in results) == Counter(dict.fromkeys(BUILTIN, 1))
    status = {e.payload.check: e.payload for e in results}
    assert status["ecc_double_bit"].status == HealthStatus.CRITICAL
    assert status["ecc_double_bit"].details["gpus_with_dbe"] == [2]
    assert status["nvlink_down"].status == HealthStatus.CRITICAL
    assert status["gpu_count"].status == HealthStatus.CRITICAL
    assert status["gpu_count"].message == "7 of 8 GPUs visible"


async def test_without_nvml_the_agent_runs_the_rest_and_says_so_once(tmp_path: Path) -> None:
    def no_library() -> None:
        raise pynvml.NVMLError_LibraryNotFound()

    clock = ManualClock()
    sink = TimedSink(clock)
    s = settings(tmp_path, backend="nvml")
    with capture_logs() as logs:
        a = agent(s, NvmlBackend(init=no_library), sink, clock)
        async with running(a, clock, 1 + len(BUILTIN)):  # no sampling, no XID wait
            await clock.advance(60)
    unavailable = [e for e in logs if e["event"] == "gpu_backend_unavailable"]
    assert [e["error"] for e in unavailable] == ["NVML: NVML Shared Library Not Found"]
    assert sink.of_type(GpuSampled) == []
    assert [b.payload.gpus for b in sink.of_type(NodeHeartbeat)] == [0, 0, 0]
    checks = {e.payload.check: e.payload for e in sink.of_type(NodeHealthChecked)}
    assert checks["gpu_count"].status == HealthStatus.CRITICAL
    assert checks["gpu_count"].message == "0 of 8 GPUs visible"
    assert checks["disk_space"].status == HealthStatus.OK


async def test_a_failing_sink_does_not_stop_the_agent(tmp_path: Path) -> None:
    class Flaky(TimedSink):
        """Every other GPU batch fails, as if the broker were away."""

        gpu_calls = 0

        async def emit_batch(self, events: Sequence[Event]) -> None:
            if isinstance(events[0], GpuSampled):
                self.gpu_calls += 1
                if self.gpu_calls % 2:
                    raise ConnectionError("broker away")
            await super().emit_batch(events)

    clock = ManualClock()
    sink = Flaky(clock)
    with capture_logs() as logs:
        a = agent(settings(tmp_path), fake_gpus(clock), sink, clock)
        async with running(a, clock, LOOPS_WITH_GPUS):
            await clock.advance(50)
    # The first sample (before the loops) failed, so sampling started at once.
    assert sink.times(GpuSampled) == [0, 20, 40]
    failed = [e for e in logs if e["event"] == "agent_tick_failed"]
    assert [e["error"] for e in failed] == ["broker away"] * 3  # at 10, 30 and 50 s
