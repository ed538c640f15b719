"""`CENTRALITY_AGENT_*`: how the node agent samples, checks and names itself."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from collectors.events import hostname
from collectors.health.registry import BUILTIN_CHECKS

# Fatal per NVIDIA's XID catalogue: the GPU needs a reset, a reboot or a replacement.
DEFAULT_FATAL_XIDS = (48, 61, 62, 64, 74, 79, 92, 94, 95, 119, 120, 140)


class AgentSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_AGENT_", extra="ignore")

    node: str = Field(default_factory=hostname, description="Node id (event subject).")
    cluster: str = Field(default="default", description="Cluster name stamped on events.")
    backend: Literal["nvml", "fake"] = Field(default="nvml", description="GPU backend.")
    fake_gpus: int = Field(default=8, ge=0, description="GPUs of the fake backend.")
    fake_faults: tuple[str, ...] = Field(default=(), description="Fake faults, see gpu/fake.py.")
    interval_s: float = Field(default=10.0, gt=0, description="GPU sampling interval.")
    heartbeat_interval_s: float = Field(default=30.0, gt=0, description="Heartbeat interval.")
    checks: tuple[str, ...] = Field(default=BUILTIN_CHECKS, description="Check modules to load.")
    checks_dir: Path | None = Field(default=None, description="Executable checks directory.")
    exec_interval_s: float = Field(default=60.0, gt=0, description="Executable check interval.")
    exec_timeout_s: float = Field(default=10.0, gt=0, description="Executable check timeout.")
    check_concurrency: int = Field(default=4, ge=1, description="Checks running at once.")
    check_resend_s: float = Field(default=300.0, gt=0, description="Re-send unchanged results.")
    expected_gpus: int | None = Field(default=None, ge=0, description="GPUs the node should have.")
    fatal_xids: tuple[int, ...] = Field(default=DEFAULT_FATAL_XIDS, description="Fatal XIDs.")
    xid_window_s: float = Field(default=3600.0, gt=0, description="How long an XID counts.")
    disk_paths: tuple[str, ...] = Field(default=("/",), description="Paths the disk check reads.")
    disk_warn_pct: float = Field(default=90.0, description="Disk used % that warns.")
    disk_critical_pct: float = Field(default=95.0, description="Disk used % that is critical.")
