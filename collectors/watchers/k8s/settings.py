"""`CENTRALITY_K8S_WATCH_*`: which API server the watcher reads and how often."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from collectors.events import hostname


class K8sWatchSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_K8S_WATCH_", extra="ignore")

    host: str | None = Field(default=None, description="API server URL; unset: kubeconfig.")
    kubeconfig: Path | None = Field(default=None, description="Kubeconfig file to load.")
    verify_ssl: bool = Field(default=True, description="Verify the API server's certificate.")
    namespace: str | None = Field(default=None, description="One namespace; unset: all.")
    cluster: str = Field(default="default", description="Cluster name stamped on events.")
    poll_s: float = Field(default=5.0, gt=0, description="How often objects are listed.")
    state_file: Path = Field(
        default=Path.home() / ".local/share/centrality/k8s-watch.json",
        description="What was emitted per job and node, so a restart sends no duplicates.",
    )
    source: str = Field(default_factory=lambda: f"k8s-watcher@{hostname()}", description="Source.")
