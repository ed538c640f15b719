import asyncio
from collections import Counter

from structlog.testing import capture_logs

from collectors.agent.agent import NodeAgent
from collectors.agent.backends import make_backend
from collectors.agent.settings import AgentSettings
from collectors.gpu.fake import FakeGpuBackend, Fault
from collectors.gpu.nvml import NvmlBackend
from collectors.sink import RecordingSink
from schemas.events import GpuSampled, GpuXidObserved, NodeHealthChecked, NodeHeartbeat
from schemas.events.nodes import HealthStatus


def settings(**kw: object) -> AgentSettings:
    base: dict[str, object] = {
        "node": "n1",
        "cluster": "c1",
        "backend": "fake",
        "interval_s": 0.1,
        "heartbeat_interval_s": 0.2,
        "expected_gpus": 8,
        "kernel_log": "none",
    }
    return AgentSettings.model_validate({**base, **kw})


async def run_for(agent: NodeAgent, seconds: float) -> None:
    stop = asyncio.Event()
    task = asyncio.create_task(agent.run(stop))
    await asyncio.sleep(seconds)
    stop.set()
    await asyncio.wait_for(task, 5)


async def test_one_message_per_node_and_interval_with_every_gpu() -> None:
    sink = RecordingSink()
    s = settings()
    await run_for(NodeAgent(s, make_backend(s), sink), 0.55)
    gpu_batches = [b for b in sink.batches if isinstance(b[0], GpuSampled)]
    assert 4 <= len(gpu_batches) <= 8
    for batch in gpu_batches:
        assert [e.payload.gpu for e in batch] == list(range(8))
        assert {e.subject for e in batch} == {"n1"}
    sample = gpu_batches[0][0].payload
    assert sample.memory_total_bytes and sample.power_w and sample.sm_clock_mhz
    beats = sink.of_type(NodeHeartbeat)
    assert len(beats) >= 2 and beats[0].payload.gpus == 8
    checks = {e.payload.check: e.payload.status for e in sink.of_type(NodeHealthChecked)}
    assert checks == {
        "gpu_count": HealthStatus.OK,
        "fatal_xids": HealthStatus.OK,
        "ecc_double_bit": HealthStatus.OK,
        "disk_space": HealthStatus.OK,
        "nvlink_down": HealthStatus.OK,
    }


async def test_xid_is_sent_at_once_and_turns_the_fatal_xid_check_critical() -> None:
    sink = RecordingSink()
    backend = FakeGpuBackend(8, (Fault.parse("xid:5:0:79"),))
    agent = NodeAgent(settings(), backend, sink)
    agent.open_backend()
    assert await agent.poll_xids(0.5) == 1
    [xid] = sink.of_type(GpuXidObserved)
    assert (xid.subject, xid.payload.gpu, xid.payload.xid) == ("n1", 5, 79)
    await agent.health.run_all_once()
    fatal = [e for e in sink.of_type(NodeHealthChecked) if e.payload.check == "fatal_xids"]
    assert fatal[-1].payload.status == HealthStatus.CRITICAL
    assert "gpu5:xid79" in fatal[-1].payload.message


async def test_faults_turn_checks_critical_and_unchanged_results_are_not_resent() -> None:
    sink = RecordingSink()
    faults = tuple(Fault.parse(f) for f in ("ecc_dbe:2:0:1", "nvlink_down:4:0:2", "lost:7:0"))
    agent = NodeAgent(settings(), FakeGpuBackend(8, faults), sink)
    agent.open_backend()
    await agent.sample()
    await agent.health.run_all_once()
    await agent.health.run_all_once()
    results = sink.of_type(NodeHealthChecked)
    assert Counter(e.payload.check for e in results) == Counter(
        {"gpu_count": 1, "fatal_xids": 1, "ecc_double_bit": 1, "disk_space": 1, "nvlink_down": 1}
    )
    status = {e.payload.check: e.payload for e in results}
    assert status["ecc_double_bit"].status == HealthStatus.CRITICAL
    assert status["ecc_double_bit"].details["gpus_with_dbe"] == [2]
    assert status["nvlink_down"].status == HealthStatus.CRITICAL
    assert status["gpu_count"].status == HealthStatus.CRITICAL
    assert status["gpu_count"].message == "7 of 8 GPUs visible"


async def test_without_nvml_the_agent_runs_the_rest_and_says_so_once() -> None:
    sink = RecordingSink()
    s = settings(backend="nvml")
    with capture_logs() as logs:
        await run_for(NodeAgent(s, NvmlBackend(), sink), 0.5)
    unavailable = [e for e in logs if e["event"] == "gpu_backend_unavailable"]
    assert len(unavailable) == 1 and "NVML" in unavailable[0]["error"]
    assert sink.of_type(GpuSampled) == []
    assert sink.of_type(NodeHeartbeat)[0].payload.gpus == 0
    checks = {e.payload.check: e.payload.status for e in sink.of_type(NodeHealthChecked)}
    assert checks["gpu_count"] == HealthStatus.CRITICAL  # 8 expected, none visible
    assert checks["disk_space"] == HealthStatus.OK


async def test_a_failing_sink_does_not_stop_the_agent() -> None:
    class Flaky(RecordingSink):
        calls = 0

        async def emit_batch(self, events):  # type: ignore[no-untyped-def]
            self.calls += 1
            if self.calls % 2:
                raise ConnectionError("broker away")
            await super().emit_batch(events)

    sink = Flaky()
    s = settings()
    await run_for(NodeAgent(s, make_backend(s), sink), 0.5)
    assert sink.of_type(GpuSampled)
