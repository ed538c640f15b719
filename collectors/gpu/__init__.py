"""GPU backends: real NVML, and a fake one with scripted faults for tests and the simulator."""

from collectors.gpu.backend import BackendUnavailable, GpuBackend, Xid

__all__ = ["BackendUnavailable", "GpuBackend", "Xid"]
