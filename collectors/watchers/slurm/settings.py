"""`CENTRALITY_SLURM_WATCH_*`: which Slurm cluster the watcher reads and how often."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from collectors.events import hostname


class SlurmWatchSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_SLURM_WATCH_", extra="ignore")

    cluster: str = Field(default="default", description="Cluster name in job ids.")
    conf: Path | None = Field(default=None, description="slurm.conf (SLURM_CONF) if not default.")
    poll_s: float = Field(default=5.0, gt=0, description="How often squeue/sinfo are read.")
    state_file: Path = Field(
        default_factory=lambda: Path.home() / ".local/share/centrality/slurm-watch.json",
        description="What was emitted per job and node, so a restart sends no duplicates.",
    )
    source: str = Field(
        default_factory=lambda: f"slurm-watcher@{hostname()}", description="Source."
    )
    command_timeout_s: float = Field(default=30.0, gt=0, description="Timeout of one squeue call.")
