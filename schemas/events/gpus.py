"""GPU and interconnect telemetry from the node agent; `subject` is the node id."""

from typing import Literal

from pydantic import Field

from schemas.envelope import Payload
from schemas.events.nodes import NodeEvent
from schemas.limits import (
    GPUS_PER_NODE,
    INT64_MAX,
    SMALL_LIST,
    SUBJECT,
    TEXT,
    UINT32_MAX,
    WORD,
    Word,
)
from schemas.registry import event


class GpuSampledPayload(Payload):
    gpu: int = Field(ge=0, le=GPUS_PER_NODE - 1, description="NVML index on the node.")
    uuid: str | None = Field(default=None, max_length=WORD)
    utilization_pct: float | None = Field(default=None, ge=0, le=100)
    memory_used_bytes: int | None = Field(default=None, ge=0, le=INT64_MAX)
    memory_total_bytes: int | None = Field(default=None, ge=0, le=INT64_MAX)
    temperature_c: float | None = Field(default=None, ge=-273.15, le=10_000)
    power_w: float | None = Field(default=None, ge=0)
    sm_clock_mhz: int | None = Field(default=None, ge=0, le=INT64_MAX)
    memory_clock_mhz: int | None = Field(default=None, ge=0, le=INT64_MAX)
    throttle_reasons: tuple[Word, ...] = Field(default=(), max_length=SMALL_LIST)
    ecc_single_bit: int | None = Field(
        default=None, ge=0, le=INT64_MAX, description="Volatile corrected."
    )
    ecc_double_bit: int | None = Field(
        default=None, ge=0, le=INT64_MAX, description="Volatile uncorrected."
    )
    retired_pages: int | None = Field(default=None, ge=0, le=INT64_MAX)
    remapped_rows_correctable: int | None = Field(default=None, ge=0, le=INT64_MAX)
    remapped_rows_uncorrectable: int | None = Field(default=None, ge=0, le=INT64_MAX)
    remap_pending: bool | None = None
    nvlink_crc_errors: int | None = Field(default=None, ge=0, le=INT64_MAX)
    nvlink_replay_errors: int | None = Field(default=None, ge=0, le=INT64_MAX)
    nvlink_recovery_errors: int | None = Field(default=None, ge=0, le=INT64_MAX)
    nvlink_links_down: int | None = Field(default=None, ge=0, le=UINT32_MAX)
    pcie_replay_errors: int | None = Field(default=None, ge=0, le=INT64_MAX)


@event(topic="gpu")
class GpuSampled(NodeEvent):
    """One GPU at one instant; an interval's samples of a node travel as one batch."""

    type: Literal["GpuSampled"] = "GpuSampled"
    payload: GpuSampledPayload


class GpuXidObservedPayload(Payload):
    gpu: int = Field(
        ge=0,
        le=GPUS_PER_NODE - 1,
        description="NVML index; from the kernel log, see collectors/gpu/pci.",
    )
    uuid: str | None = Field(default=None, max_length=WORD)
    xid: int = Field(
        ge=0, le=UINT32_MAX, description="NVIDIA's code; schemas.xids says what it means."
    )
    message: str | None = Field(default=None, max_length=TEXT)
    pci_bus_id: str | None = Field(
        default=None, max_length=16, description="`0000:3b:00`, when the kernel log named it."
    )
    channel: Literal["nvml", "kernel", "kernel-inferred"] | None = Field(
        default=None,
        description="How it was seen: NVML's event API, an `NVRM: Xid` kernel line, or a "
        "kernel line that says what an XID would with no XID line, reported as that XID (the "
        "GPU fell off the bus: 79; `RmInitAdapter failed!`: 143; GSP's errors rate-limited, the "
        "GPU to be reset: 119).",
    )


@event(topic="nodes")
class GpuXidObserved(NodeEvent):
    type: Literal["GpuXidObserved"] = "GpuXidObserved"
    payload: GpuXidObservedPayload


class NcclSampledPayload(Payload):
    collective: str = Field(
        max_length=WORD, description="all_reduce, all_gather, reduce_scatter, ..."
    )
    size_bytes: int = Field(ge=0, le=INT64_MAX)
    algbw_gbps: float = Field(ge=0)
    busbw_gbps: float = Field(ge=0)
    duration_us: float = Field(ge=0)
    ranks: int = Field(ge=1, le=INT64_MAX)
    job_id: str | None = Field(
        default=None, max_length=SUBJECT, description="The job it was measured in, if any."
    )
    source_kind: Literal["nccl-tests", "nccl-debug", "benchmark"] = "nccl-tests"


@event(topic="gpu")
class NcclSampled(NodeEvent):
    type: Literal["NcclSampled"] = "NcclSampled"
    payload: NcclSampledPayload
