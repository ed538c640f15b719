"""`CENTRALITY_CHECKPOINT_*`: how checkpoint notices are stamped and what the watcher watches."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from collectors.events import hostname


class CheckpointSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_CHECKPOINT_", extra="ignore")

    cluster: str = Field(
        # A Slurm job's id is named by its cluster (`current_job_id`): its notices must be too,
        # or what they lead to is judged against another cluster's fleet.
        default_factory=lambda: os.environ.get("SLURM_CLUSTER_NAME", "default"),
        description="Cluster name stamped on notices; in a Slurm job, Slurm's "
        "SLURM_CLUSTER_NAME unless set, else `default`.",
    )
    source: str = Field(default_factory=lambda: f"checkpoints@{hostname()}", description="Source.")
    timeout_s: float = Field(default=10.0, gt=0, description="How long notify_checkpoint waits.")
    roots: tuple[str, ...] = Field(default=(), description="Globs of checkpoint directories.")
    job: str | None = Field(default=None, description="Job the watched checkpoints belong to.")
    step_pattern: str | None = Field(
        default=None,
        description="Regex on an entry's name, group 1 the step; by default the names of "
        "Lightning, NeMo, Hugging Face, torch DCP, Megatron-LM, DeepSpeed and Ray Train.",
    )
    require_sentinel: bool = Field(
        default=False, description="Only `<name>.COMPLETE` sentinels count, not settled dirs."
    )
    poll_s: float = Field(default=2.0, gt=0, description="Watcher poll interval.")
    state_file: Path = Field(
        default_factory=lambda: Path.home() / ".local/share/centrality/checkpoints-seen.json",
        description="Checkpoints already announced, so a restart sends no duplicates.",
    )
