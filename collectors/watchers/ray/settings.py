"""`CENTRALITY_RAY_WATCH_*`: which Ray cluster the watcher reads and how often."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from collectors.events import hostname


class RayWatchSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_RAY_WATCH_", extra="ignore")

    address: str = Field(default="http://127.0.0.1:8265", description="Ray dashboard URL.")
    cluster: str = Field(default="default", description="Cluster name stamped on events.")
    poll_s: float = Field(default=5.0, gt=0, description="How often jobs and nodes are read.")
    state_file: Path = Field(
        default_factory=lambda: Path.home() / ".local/share/centrality/ray-watch.json",
        description="What was emitted per job and node, so a restart sends no duplicates.",
    )
    source: str = Field(default_factory=lambda: f"ray-watcher@{hostname()}", description="Source.")
    request_timeout_s: float = Field(default=10.0, gt=0, description="Timeout of one request.")
    max_log_bytes: int = Field(default=1 << 20, gt=0, description="Log tail scanned for signals.")
