"""`CENTRALITY_AGENT_*`: how the node agent samples, checks and names itself."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from collectors.events import hostname
from collectors.gpu.pci import NVIDIA_SYSFS_DRIVER
from collectors.health.registry import BUILTIN_CHECKS
from schemas.xids import FATAL_XIDS

DEFAULT_FATAL_XIDS = tuple(sorted(FATAL_XIDS))


class AgentSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_AGENT_", extra="ignore")

    node: str = Field(default_factory=hostname, description="Node id (event subject).")
    cluster: str = Field(default="default", description="Cluster name stamped on events.")
    backend: Literal["nvml", "fake"] = Field(default="nvml", description="GPU backend.")
    fake_gpus: int = Field(default=8, ge=0, description="GPUs of the fake backend.")
    fake_faults: tuple[str, ...] = Field(default=(), description="Fake faults, see gpu/fake.py.")
    interval_s: float = Field(default=10.0, gt=0, description="GPU sampling interval.")
    heartbeat_interval_s: float = Field(default=30.0, gt=0, description="Heartbeat interval.")
    facts_interval_s: float = Field(
        default=3600.0,
        gt=0,
        description="The node's facts (GPU model, memory, driver, serials) are sent at start and "
        "again this often.",
    )
    fake_gpu_model: str = Field(
        default="NVIDIA H100 80GB HBM3", description="GPU model the fake backend reports."
    )
    checks: tuple[str, ...] = Field(default=BUILTIN_CHECKS, description="Check modules to load.")
    checks_dir: Path | None = Field(default=None, description="Executable checks directory.")
    exec_interval_s: float = Field(default=60.0, gt=0, description="Executable check interval.")
    exec_timeout_s: float = Field(default=10.0, gt=0, description="Executable check timeout.")
    exec_severity: Literal["WARN", "CRITICAL"] = Field(
        default="CRITICAL", description="Status of an executable check's exit 1 (NPD's NonOK)."
    )
    exec_severity_by_check: dict[str, Literal["WARN", "CRITICAL"]] = Field(
        default_factory=dict, description='Per-check override, JSON: {"check_ntp": "WARN"}.'
    )
    check_concurrency: int = Field(default=4, ge=1, description="Checks running at once.")
    check_resend_s: float = Field(default=300.0, gt=0, description="Re-send unchanged results.")
    expected_gpus: int | None = Field(default=None, ge=0, description="GPUs the node should have.")
    fatal_xids: tuple[int, ...] = Field(default=DEFAULT_FATAL_XIDS, description="Fatal XIDs.")
    xid_window_s: float = Field(default=3600.0, gt=0, description="How long an XID counts.")
    kernel_log: str = Field(
        default="kmsg", description="Kernel log for XIDs: kmsg, journal, a file path, or none."
    )
    kernel_log_poll_s: float = Field(default=0.5, gt=0, description="Kernel log read interval.")
    kernel_log_from_start: bool = Field(
        default=False, description="Read the kernel log's earlier records too, not only new ones."
    )
    xid_dedup_s: float = Field(
        default=10.0, ge=0, description="An XID seen by NVML and the kernel log this close is one."
    )
    pci_driver_dir: Path = Field(
        default=NVIDIA_SYSFS_DRIVER, description="sysfs dir of NVIDIA PCI devices (bus id → index)."
    )
    disk_paths: tuple[str, ...] = Field(default=("/",), description="Paths the disk check reads.")
    disk_warn_pct: float = Field(default=90.0, description="Disk used % that warns.")
    disk_critical_pct: float = Field(default=95.0, description="Disk used % that is critical.")
