"""`CENTRALITY_K8S_WATCH_*`: which API server the watcher watches, and its timings."""

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
    timeout_s: int = Field(
        default=300,
        gt=0,
        description="How long the API server holds one watch request open; it is then resumed "
        "from the last resourceVersion (nothing is listed again).",
    )
    page_size: int = Field(
        default=500,
        gt=0,
        description="Objects per LIST page (a first list of a large cluster comes in pages).",
    )
    settle_s: float = Field(
        default=0.5,
        ge=0,
        description="Changes arriving within this long are reconciled together (a pod's exit "
        "and its Job's failure).",
    )
    retry_s: float = Field(
        default=5.0, gt=0, description="Pause before a failed reconcile (Kafka away) is retried."
    )
    backoff_max_s: float = Field(
        default=30.0, gt=0, description="Longest pause between API retries (jittered backoff)."
    )
    switch_label: str = Field(
        default="network.topology.nvidia.com/leaf",
        description="The node label naming the leaf switch a node hangs off: its `switch` fact, "
        "the failure domain incidents name. The default is what NVIDIA Topograph writes for "
        "the switches directly connected to compute nodes "
        "(https://docs.nvidia.com/topograph/engines/kubernetes); Topograph 1.x writes "
        "`fabric.topograph.run/tier-0`, and Kueue's topology-aware scheduling examples label "
        "racks `cloud.provider.com/topology-rack` "
        "(https://kueue.sigs.k8s.io/docs/tasks/run/topology_aware_scheduling/): set the label "
        "of your lowest switch level. A node without it has no switch.",
    )
    state_file: Path = Field(
        default_factory=lambda: Path.home() / ".local/share/centrality/k8s-watch.json",
        description="What was emitted per job and node, so a restart sends no duplicates.",
    )
    source: str = Field(default_factory=lambda: f"k8s-watcher@{hostname()}", description="Source.")
