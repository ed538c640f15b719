"""The small protocol the node agent samples GPUs through."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from schemas.events.gpus import GpuSampledPayload
from schemas.events.nodes import NodeFactsObservedPayload


class BackendUnavailable(RuntimeError):
    """No GPUs can be read here (no driver, no NVML); the agent runs on without them."""


@dataclass(frozen=True)
class Xid:
    gpu: int
    xid: int
    uuid: str | None = None
    message: str | None = None


class GpuBackend(Protocol):
    name: str

    def open(self) -> int:
        """Initialise and return the GPU count; raise BackendUnavailable if there are none."""
        ...

    def visible_gpus(self) -> int:
        """GPUs the driver sees now (one fallen off the bus lowers it)."""
        ...

    def sample(self, gpu: int) -> GpuSampledPayload: ...

    def facts(self) -> NodeFactsObservedPayload:
        """What the GPUs are: model, count, memory, driver and CUDA versions, serials."""
        ...

    def pci_bus_ids(self) -> dict[int, str]:
        """GPU index → PCI bus id, for the GPUs the backend knows (the kernel log names bus ids)."""
        ...

    def wait_xids(self, timeout_s: float) -> list[Xid]:
        """Block up to `timeout_s` for XID events; called from a worker thread."""
        ...

    def close(self) -> None: ...
