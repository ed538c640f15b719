"""A fake NVML: N GPUs with plausible readings and scripted faults, on a real or virtual clock.

Fault specs (CLI `--fault`, simulator) are `kind:gpu:at_s[:value[:every_s]]`, e.g.
`xid:3:5:79:60` (XID 79 on GPU 3 at 5 s, again every 60 s), `ecc_dbe:2:0:4`,
`throttle:1:0:HwSlowdown`, `nvlink_down:0:10:2`, `lost:7:30` (GPU 7 falls off the bus).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

from collectors.gpu.backend import Xid
from schemas.events.gpus import GpuSampledPayload
from schemas.events.nodes import NodeFactsObservedPayload

FaultKind = Literal["xid", "ecc_dbe", "throttle", "nvlink_down", "lost"]
GIB = 1024**3


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    gpu: int
    at_s: float = 0.0
    value: str = ""
    every_s: float | None = None

    @classmethod
    def parse(cls, spec: str) -> Fault:
        parts = spec.split(":")
        if len(parts) < 3 or parts[0] not in get_args(FaultKind):
            raise ValueError(
                f"fault {spec!r}: expected kind:gpu:at_s[:value[:every_s]], "
                f"kind one of {get_args(FaultKind)}"
            )
        every = float(parts[4]) if len(parts) > 4 and parts[4] else None
        value = parts[3] if len(parts) > 3 else ""
        return cls(parts[0], int(parts[1]), float(parts[2]), value, every)  # type: ignore[arg-type]

    def active(self, elapsed_s: float) -> bool:
        return elapsed_s >= self.at_s

    def occurrences(self, after_s: float, until_s: float) -> int:
        """How many times a (recurring) fault fires in (after_s, until_s]."""

        def fired_by(t: float) -> int:
            if t < self.at_s:
                return 0
            if self.every_s is None:
                return 1
            return 1 + int((t - self.at_s) // self.every_s)

        return fired_by(until_s) - fired_by(after_s)


class FakeGpuBackend:
    name = "fake"

    def __init__(
        self,
        gpus: int = 8,
        faults: tuple[Fault, ...] = (),
        *,
        seed: int = 0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        nvlinks: int = 18,
        memory_total_bytes: int = 80 * GIB,
        model: str = "NVIDIA H100 80GB HBM3",
    ) -> None:
        self.gpus = gpus
        self.model = model
        self.faults = faults
        # A simulated fleet samples 80,000 GPUs per interval, nearly all without a fault: each
        # kind's faults are looked up, not filtered, per sample.
        self._by_kind: dict[FaultKind, tuple[Fault, ...]] = {
            kind: tuple(f for f in faults if f.kind == kind) for kind in {f.kind for f in faults}
        }
        self.seed = seed
        self.clock = clock
        self.sleep = sleep  # blocks the calling thread (wait_xids runs in one) on `clock`
        self.nvlinks = nvlinks
        self.memory_total_bytes = memory_total_bytes
        self._t0 = clock()
        self._xids_until_s = -1.0

    def elapsed_s(self) -> float:
        return self.clock() - self._t0

    def open(self) -> int:
        self._t0 = self.clock()
        self._xids_until_s = -1.0
        return self.gpus

    def facts(self) -> NodeFactsObservedPayload:
        return NodeFactsObservedPayload(
            gpu_model=self.model,
            gpu_count=self.gpus,
            gpu_memory_bytes=self.memory_total_bytes,
            driver_version="580.159.04",
            cuda_version="13.0",
            gpu_serials=tuple(f"fake{self.seed:04d}{gpu:04d}" for gpu in range(self.gpus)),
        )

    def pci_bus_ids(self) -> dict[int, str]:
        """Made-up bus ids, one bus per GPU in index order (as NVML numbers real ones)."""
        return {gpu: f"00000000:{gpu + 0x10:02X}:00.0" for gpu in range(self.gpus)}

    def visible_gpus(self) -> int:
        lost = {f.gpu for f in self._active("lost")}
        return self.gpus - len(lost & set(range(self.gpus)))

    def sample(self, gpu: int) -> GpuSampledPayload:
        t = self.elapsed_s()
        phase = (self.seed * 7919 + gpu * 104729) % 1000 / 159.0
        wave = 0.5 + 0.5 * math.sin(t / 30.0 + phase)
        util = 60.0 + 38.0 * wave
        throttles = tuple(f.value or "HwSlowdown" for f in self._active("throttle", gpu))
        dbe = sum(int(f.value or 1) for f in self._active("ecc_dbe", gpu))
        down = sum(int(f.value or 1) for f in self._active("nvlink_down", gpu))
        return GpuSampledPayload(
            gpu=gpu,
            uuid=self.uuid(gpu),
            utilization_pct=round(util, 1),
            memory_used_bytes=int(self.memory_total_bytes * (0.55 + 0.4 * wave)),
            memory_total_bytes=self.memory_total_bytes,
            temperature_c=round(45.0 + 30.0 * wave, 1),
            power_w=round(180.0 + 500.0 * wave * (0.6 if throttles else 1.0), 1),
            sm_clock_mhz=1100 if throttles else 1980,
            memory_clock_mhz=2619,
            throttle_reasons=throttles,
            ecc_single_bit=int(t // 3600),
            ecc_double_bit=dbe,
            retired_pages=0,
            remapped_rows_correctable=0,
            remapped_rows_uncorrectable=dbe,
            remap_pending=dbe > 0,
            nvlink_crc_errors=down * 1000,
            nvlink_replay_errors=down * 10,
            nvlink_recovery_errors=down,
            nvlink_links_down=min(down, self.nvlinks),
            pcie_replay_errors=0,
        )

    def pending_xids(self) -> list[Xid]:
        """XIDs scripted since the previous call (non-blocking; the simulator uses this)."""
        now = self.elapsed_s()
        since, self._xids_until_s = self._xids_until_s, now
        return [
            Xid(gpu=f.gpu, xid=int(f.value or 79), uuid=self.uuid(f.gpu), message="fake")
            for f in self.faults
            if f.kind == "xid"
            for _ in range(f.occurrences(since, now))
        ]

    def wait_xids(self, timeout_s: float) -> list[Xid]:
        deadline = self.clock() + timeout_s
        while True:
            found = self.pending_xids()
            left = deadline - self.clock()
            if found or left <= 0:
                return found
            self.sleep(min(left, 0.25))

    def close(self) -> None:
        return None

    def uuid(self, gpu: int) -> str:
        return f"GPU-fake{self.seed:04x}-{gpu:04d}"

    def _active(self, kind: FaultKind, gpu: int | None = None) -> list[Fault]:
        faults = self._by_kind.get(kind, ())
        if not faults:
            return []
        t = self.elapsed_s()
        return [f for f in faults if (gpu is None or f.gpu == gpu) and f.active(t)]
