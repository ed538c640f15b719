"""Each collector through the real Emitter into the real local Kafka, read back and decoded."""

import asyncio
from pathlib import Path

import pytest

from collectors.agent.agent import NodeAgent
from collectors.agent.settings import AgentSettings
from collectors.checkpoints.notify import CheckpointNotifier
from collectors.checkpoints.settings import CheckpointSettings
from collectors.checkpoints.watcher import CheckpointWatcher
from collectors.gpu.fake import FakeGpuBackend, Fault
from collectors.logs.settings import TailSettings
from collectors.logs.tailer import LogTailer
from collectors.simulate.config import SimConfig
from collectors.simulate.runner import simulate
from schemas.codec import decode
from schemas.events import (
    CheckpointSaved,
    GpuSampled,
    GpuXidObserved,
    LogLinesObserved,
    LogSignalDetected,
    NodeHealthChecked,
    NodeHeartbeat,
)
from schemas.events.logs import LogSignal
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from tests.kafka_helpers import read_events, read_messages

pytestmark = pytest.mark.integration


async def test_agent_batches_samples_per_node_and_interval(kafka_settings: KafkaSettings) -> None:
    settings = AgentSettings(
        node="gpu-7",
        cluster="c1",
        interval_s=0.2,
        heartbeat_interval_s=0.5,
        expected_gpus=8,
        kernel_log="none",
    )
    backend = FakeGpuBackend(8, (Fault.parse("xid:2:0.3:79"),))
    stop = asyncio.Event()
    async with Emitter(kafka_settings) as emitter:
        task = asyncio.create_task(NodeAgent(settings, backend, emitter).run(stop))
        await asyncio.sleep(1.2)
        stop.set()
        await task
    messages = await read_messages(kafka_settings, "gpu")
    assert len(messages) >= 4
    for raw in messages:
        batch = decode(raw)
        assert [type(e) for e in batch] == [GpuSampled] * 8
        assert {e.subject for e in batch} == {"gpu-7"}
    nodes = await read_events(kafka_settings, "nodes")
    kinds = {type(e) for e in nodes}
    assert {NodeHeartbeat, NodeHealthChecked, GpuXidObserved} <= kinds


async def test_training_complete_line_becomes_a_signal(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    (tmp_path / "slurm-4242.out").write_text("epoch 3 done\nTraining Complete\n")
    settings = TailSettings(
        paths=(str(tmp_path / "slurm-*.out"),),
        state_file=tmp_path / "offsets.json",
        cluster="c1",
        node="n1",
    )
    async with Emitter(kafka_settings) as emitter:
        assert await LogTailer(settings, emitter).poll_once() == 2
    [signal] = [e for e in await read_events(kafka_settings, "jobs")]
    assert isinstance(signal, LogSignalDetected)
    assert (signal.subject, signal.payload.signal) == ("slurm/c1/4242", LogSignal.TRAINING_COMPLETE)
    [lines] = await read_events(kafka_settings, "logs")
    assert isinstance(lines, LogLinesObserved) and len(lines.payload.lines) == 2


async def test_checkpoint_directory_and_sdk_call_become_checkpoint_saved(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    root = tmp_path / "ckpt"
    (root / "step-1200").mkdir(parents=True)
    (root / "step-1200" / "model.pt").write_bytes(b"w" * 64)
    settings = CheckpointSettings(
        roots=(str(root),), job="slurm/c1/5", cluster="c1", state_file=tmp_path / "seen.json"
    )
    async with Emitter(kafka_settings) as emitter:
        watcher = CheckpointWatcher(settings, emitter)
        await watcher.poll_once()
        [saved] = await watcher.poll_once()
    assert saved.payload.step == 1200

    notifier = CheckpointNotifier(settings, sink_factory=lambda: Emitter(kafka_settings))
    try:
        await asyncio.to_thread(notifier.notify, "slurm/c1/5", 1300, "s3://b/step-1300")
    finally:
        notifier.close()
    events = await read_events(kafka_settings, "jobs")
    assert [(type(e), e.payload.step) for e in events] == [
        (CheckpointSaved, 1200),
        (CheckpointSaved, 1300),
    ]


async def test_simulator_drives_a_thousand_nodes_through_kafka(
    kafka_settings: KafkaSettings,
) -> None:
    config = SimConfig(nodes=1000, gpus=8, jobs=100, seed=3)
    async with Emitter(kafka_settings) as emitter:
        stats = await simulate(config, emitter, duration_s=10.0)
    assert stats.ticks == 2
    gpu = await read_messages(kafka_settings, "gpu")
    assert len(gpu) >= 2000  # one message per node per tick (+ NCCL samples join them)
    assert stats.events > 16_000
