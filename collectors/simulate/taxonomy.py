"""Interruptions drawn from a published table of their causes, scaled to a simulated fleet.

The table is Meta's: Table 5 of "The Llama 3 Herd of Models" (Dubey et al., 2024,
arXiv:2407.21783, section 3.3.4), the root causes of the 419 unexpected interruptions of Llama 3
405B's pre-training over a 54-day snapshot on up to 16,384 H100 GPUs. The counts are the
paper's (they sum to 419; the paper's percentages do not all match them: Faulty GPU's 148 is
35.3 % of 419, printed 30.1 %).

Each cause is simulated by what it shows a control plane (`emits`): a GPU's XID (and for HBM3
its uncorrectable ECC count), thermal throttling, a failed health check that keeps failing
(NIC, SSD), a node that goes silent (power, chassis, CPU, host memory, maintenance), or only the
job's own failure and the words it logs (software bugs, NCCL timeouts, network outside the node,
silent data corruption). Causes that `break_node` leave it faulty until repaired: a job placed
there fails again, and its benchmark fails, unless the fault hides from benchmarks (silent data
corruption passes them).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from schemas.events.logs import LogSignal

Emits = Literal["xid", "ecc", "thermal", "health", "node_lost", "job"]
DAY_S = 86_400.0


@dataclass(frozen=True)
class Cause:
    component: str
    category: str
    count: int
    emits: Emits
    signal: LogSignal  # what the failed job's logs say
    line: str  # the line it says it with
    breaks_node: bool = True
    benchmark_sees: bool = True
    xid: int | None = None
    check: str | None = None  # a failing health check's name
    maintenance: bool = False  # the node comes back healthy on its own


@dataclass(frozen=True)
class Taxonomy:
    name: str
    source: str
    gpus: int
    days: float
    causes: tuple[Cause, ...]

    @property
    def interruptions(self) -> int:
        return sum(c.count for c in self.causes)

    def expected(self, gpus: int, duration_s: float, acceleration: float = 1.0) -> float:
        """Interruptions a fleet of `gpus` would see over `duration_s` at the table's rate per
        GPU-hour, times `acceleration`."""
        per_gpu_s = self.interruptions / (self.gpus * self.days * DAY_S)
        return per_gpu_s * gpus * duration_s * acceleration


# What a failed job's logs say, by what failed.
_LAUNCH = (LogSignal.CUDA_ERROR, "CUDA error: unspecified launch failure")
_ECC = (LogSignal.CUDA_ERROR, "CUDA error: uncorrectable ECC error encountered")
_WATCHDOG = (LogSignal.NCCL_TIMEOUT, "Watchdog caught collective operation timeout")
_NETWORK = (LogSignal.NCCL_ERROR, "NCCL error: remote process exited or there was a network error")
_TRACE = (LogSignal.TRACEBACK, "Traceback (most recent call last):")
_NAN = (LogSignal.TRACEBACK, "RuntimeError: loss is NaN")
_IO = (LogSignal.TRACEBACK, "OSError: [Errno 5] Input/output error")
_STORAGE = (LogSignal.TRACEBACK, "ConnectionError: storage service unavailable")
_LOST = (LogSignal.NODE_LOST, "node lost: it stopped answering")
LLAMA3_405B = Taxonomy(
    name="llama3-405b",
    source="Dubey et al., The Llama 3 Herd of Models, arXiv:2407.21783 (2024), Table 5",
    gpus=16_384,
    days=54,
    causes=(
        Cause("Faulty GPU", "GPU", 148, "xid", *_LAUNCH, xid=79),
        Cause("GPU HBM3 Memory", "GPU", 72, "ecc", *_ECC, xid=48),
        Cause("Software Bug", "Dependency", 54, "job", *_TRACE, breaks_node=False),
        Cause("Network Switch/Cable", "Network", 35, "job", *_WATCHDOG, breaks_node=False),
        Cause(
            "Host Maintenance", "Unplanned Maintenance", 32, "node_lost", *_LOST, maintenance=True
        ),
        Cause("GPU SRAM Memory", "GPU", 19, "xid", *_ECC, xid=95),
        Cause("GPU System Processor", "GPU", 17, "xid", *_LAUNCH, xid=119),
        Cause("NIC", "Host", 7, "health", *_NETWORK, check="ib_port"),
        Cause("NCCL Watchdog Timeouts", "Unknown", 7, "job", *_WATCHDOG, breaks_node=False),
        Cause("Silent Data Corruption", "GPU", 6, "job", *_NAN, benchmark_sees=False),
        Cause("GPU Thermal Interface + Sensor", "GPU", 6, "thermal", *_WATCHDOG),
        Cause("SSD", "Host", 3, "health", *_IO, check="disk"),
        Cause("Power Supply", "Host", 3, "node_lost", *_LOST),
        Cause("Server Chassis", "Host", 2, "node_lost", *_LOST),
        Cause("IO Expansion Board", "Host", 2, "node_lost", *_LOST),
        Cause("Dependency", "Dependency", 2, "job", *_STORAGE, breaks_node=False),
        Cause("CPU", "Host", 2, "node_lost", *_LOST),
        Cause("System Memory", "Host", 2, "node_lost", *_LOST),
    ),
)
TAXONOMIES = {LLAMA3_405B.name: LLAMA3_405B}


@dataclass(frozen=True)
class PlannedFault:
    at_s: float
    cause: Cause
    node: int  # index into the fleet
    gpu: int


def draw(
    taxonomy: Taxonomy,
    nodes: int,
    gpus_per_node: int,
    horizon_s: float,
    acceleration: float,
    rng: random.Random,
) -> list[PlannedFault]:
    """Faults as a Poisson process at the table's rate for this fleet (times `acceleration`),
    each of a cause drawn by the table's counts, on a node and GPU drawn uniformly."""
    rate_per_s = taxonomy.expected(nodes * gpus_per_node, 1.0, acceleration)
    weights = [c.count for c in taxonomy.causes]
    faults, at = [], 0.0
    while rate_per_s > 0:
        at += rng.expovariate(rate_per_s)
        if at >= horizon_s:
            break
        [cause] = rng.choices(taxonomy.causes, weights)
        faults.append(PlannedFault(at, cause, rng.randrange(nodes), rng.randrange(gpus_per_node)))
    return faults
