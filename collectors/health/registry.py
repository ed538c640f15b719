"""`@health_check(name, interval_s=…, timeout_s=…)` registers one check; a module holds one."""

from __future__ import annotations

import importlib
import shutil
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from collectors.gpu.backend import Xid
from collectors.gpu.kernel_xids import KernelGpuFault
from schemas.events.gpus import GpuSampledPayload
from schemas.events.nodes import HealthStatus

BUILTIN_CHECKS = (
    "collectors.health.builtin.gpu_count",
    "collectors.health.builtin.fatal_xids",
    "collectors.health.builtin.kernel_gpu_faults",
    "collectors.health.builtin.ecc_double_bit",
    "collectors.health.builtin.disk_space",
    "collectors.health.builtin.nvlink_down",
)


@dataclass(frozen=True)
class CheckResult:
    status: HealthStatus
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)


DiskUsage: TypeAlias = Callable[[str], tuple[int, int, int]]  # path → total, used, free bytes


@dataclass
class CheckContext:
    """What the agent knows that checks read: latest samples, recent XIDs, its settings."""

    expected_gpus: int | None
    visible_gpus: Callable[[], int]
    fatal_xids: frozenset[int]
    xid_window_s: float
    disk_paths: tuple[str, ...]
    disk_warn_pct: float
    disk_critical_pct: float
    samples: dict[int, GpuSampledPayload] = field(default_factory=dict)
    xids: deque[tuple[float, Xid]] = field(default_factory=lambda: deque(maxlen=1024))
    # Kernel records saying a GPU is lost or needs a reset without naming it.
    gpu_faults: deque[tuple[float, KernelGpuFault]] = field(
        default_factory=lambda: deque(maxlen=256)
    )
    # The host, where checks read it: the agent's clock (XIDs are stamped on it) and the disks.
    now: Callable[[], float] = time.monotonic
    disk_usage: DiskUsage = shutil.disk_usage


CheckFn: TypeAlias = Callable[[CheckContext], CheckResult | Awaitable[CheckResult]]


@dataclass(frozen=True)
class HealthCheck:
    name: str
    run: CheckFn
    interval_s: float
    timeout_s: float


_CHECKS: dict[str, HealthCheck] = {}


def health_check(
    name: str, *, interval_s: float = 60.0, timeout_s: float = 10.0
) -> Callable[[CheckFn], CheckFn]:
    def register(fn: CheckFn) -> CheckFn:
        existing = _CHECKS.get(name)
        if existing is not None and existing.run is not fn:
            raise ValueError(f"health check {name!r} is registered twice")
        _CHECKS[name] = HealthCheck(name, fn, interval_s, timeout_s)
        return fn

    return register


def load_checks(modules: Iterable[str]) -> list[HealthCheck]:
    """Import check modules (registering them) and return the checks they declare."""
    wanted = set(modules)
    for module in wanted:
        importlib.import_module(module)
    return [c for c in _CHECKS.values() if getattr(c.run, "__module__", None) in wanted]
