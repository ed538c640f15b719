"""The GPU backend the settings ask for."""

from __future__ import annotations

from collectors.agent.settings import AgentSettings
from collectors.gpu.backend import GpuBackend
from collectors.gpu.fake import FakeGpuBackend, Fault


def make_backend(settings: AgentSettings) -> GpuBackend:
    if settings.backend == "fake":
        faults = tuple(Fault.parse(spec) for spec in settings.fake_faults)
        return FakeGpuBackend(settings.fake_gpus, faults, model=settings.fake_gpu_model)
    from collectors.gpu.nvml import NvmlBackend

    return NvmlBackend()
