"""GPU and interconnect telemetry from the node agent; `subject` is the node id."""

from typing import Literal

from pydantic import Field

from schemas.envelope import Event, Payload
from schemas.registry import event


class GpuSampledPayload(Payload):
    gpu: int = Field(ge=0, description="NVML index on the node.")
    uuid: str | None = None
    utilization_pct: float | None = Field(default=None, ge=0, le=100)
    memory_used_bytes: int | None = Field(default=None, ge=0)
    memory_total_bytes: int | None = Field(default=None, ge=0)
    temperature_c: float | None = None
    power_w: float | None = Field(default=None, ge=0)
    sm_clock_mhz: int | None = Field(default=None, ge=0)
    memory_clock_mhz: int | None = Field(default=None, ge=0)
    throttle_reasons: tuple[str, ...] = ()
    ecc_single_bit: int | None = Field(default=None, ge=0, description="Volatile corrected.")
    ecc_double_bit: int | None = Field(default=None, ge=0, description="Volatile uncorrected.")
    retired_pages: int | None = Field(default=None, ge=0)
    remapped_rows_correctable: int | None = Field(default=None, ge=0)
    remapped_rows_uncorrectable: int | None = Field(default=None, ge=0)
    remap_pending: bool | None = None
    nvlink_crc_errors: int | None = Field(default=None, ge=0)
    nvlink_replay_errors: int | None = Field(default=None, ge=0)
    nvlink_recovery_errors: int | None = Field(default=None, ge=0)
    nvlink_links_down: int | None = Field(default=None, ge=0)
    pcie_replay_errors: int | None = Field(default=None, ge=0)


@event(topic="gpu")
class GpuSampled(Event):
    """One GPU at one instant; an interval's samples of a node travel as one batch."""

    type: Literal["GpuSampled"] = "GpuSampled"
    payload: GpuSampledPayload


class GpuXidObservedPayload(Payload):
    gpu: int = Field(ge=0, description="NVML index; from the kernel log, see collectors/gpu/pci.")
    uuid: str | None = None
    xid: int = Field(ge=0, description="NVIDIA's code; schemas.xids says what it means.")
    message: str | None = None
    pci_bus_id: str | None = Field(
        default=None, max_length=16, description="`0000:3b:00`, when the kernel log named it."
    )
    channel: Literal["nvml", "kernel", "kernel-inferred"] | None = Field(
        default=None,
        description="How it was seen: NVML's event API, an `NVRM: Xid` kernel line, or a "
        "kernel line saying the GPU fell off the bus with no XID (reported as Xid 79).",
    )


@event(topic="nodes")
class GpuXidObserved(Event):
    type: Literal["GpuXidObserved"] = "GpuXidObserved"
    payload: GpuXidObservedPayload


class NcclSampledPayload(Payload):
    collective: str = Field(description="all_reduce, all_gather, reduce_scatter, ...")
    size_bytes: int = Field(ge=0)
    algbw_gbps: float = Field(ge=0)
    busbw_gbps: float = Field(ge=0)
    duration_us: float = Field(ge=0)
    ranks: int = Field(ge=1)
    job_id: str | None = Field(default=None, description="The job it was measured in, if any.")
    source_kind: Literal["nccl-tests", "nccl-debug", "benchmark"] = "nccl-tests"


@event(topic="gpu")
class NcclSampled(Event):
    type: Literal["NcclSampled"] = "NcclSampled"
    payload: NcclSampledPayload
