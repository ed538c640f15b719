"""Which GPU index a PCI bus id is.

The backend knows it exactly (NVML's PCI info per index). Where it does not (NVML failed to
start, or the GPU left the bus before the agent asked), the NVIDIA devices bound in sysfs
are used: NVML and nvidia-smi number GPUs in PCI bus order by default, so the n-th bus id in
sorted order is GPU n. A bus id known to neither takes the place it would have in that order.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from collectors.gpu.kernel_xids import normalize_bus_id

NVIDIA_SYSFS_DRIVER = Path("/sys/bus/pci/drivers/nvidia")


def sysfs_bus_ids(driver_dir: Path) -> list[str]:
    if not driver_dir.is_dir():
        return []
    found = []
    for entry in driver_dir.iterdir():
        try:
            found.append(normalize_bus_id(entry.name))
        except ValueError:
            continue  # bind, unbind, module, new_id, ...
    return sorted(set(found))


class GpuIndex:
    def __init__(self, backend_ids: Mapping[int, str], sysfs: list[str]) -> None:
        self.exact = {normalize_bus_id(bus): gpu for gpu, bus in backend_ids.items()}
        self.by_order = sysfs

    def of(self, bus_id: str) -> int:
        bus_id = normalize_bus_id(bus_id)
        if bus_id in self.exact:
            return self.exact[bus_id]
        if bus_id in self.by_order:
            return self.by_order.index(bus_id)
        return sorted({*self.by_order, *self.exact, bus_id}).index(bus_id)
