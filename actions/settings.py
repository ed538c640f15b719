"""Settings of the action worker (`CENTRALITY_ACTIONS_*`)."""

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.groups import NODES, Match

ALL_CLUSTERS = "*"


class QuarantineGroup(BaseModel):
    """A node group's own quarantine cap, within its cluster's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    match: Match = Field(description="The nodes of the group, as rule scopes select them.")
    quarantine_max_share: float = Field(
        ge=0, le=1, description="Never more than this share of the group's nodes drained."
    )
    quarantine_window_s: float | None = Field(
        default=None, gt=0, description="The window it counts drains in; None: the cluster's."
    )

    @field_validator("match")
    @classmethod
    def _nodes(cls, value: Match) -> Match:
        if NODES not in value.kinds:
            raise ValueError(f"{value.said()} selects no node")
        return value


class ActionsSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_ACTIONS_", extra="ignore")

    group_id: str = Field(default="centrality-actions", description="Consumer group of the worker.")
    adapter: str = Field(default="memory", description="Scheduler adapter (`memory`, `slurm`, …).")
    source: str = Field(default="actions", description="`source` of the results it emits.")
    dry_run: bool = Field(
        default=False, description="Shadow mode: record the planned calls, call nothing."
    )
    allow: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Enabled actions per cluster (`*` = any other cluster); empty = all allowed.",
    )
    fleet_size: dict[str, int] = Field(
        default_factory=dict,
        description="Nodes per cluster the quarantine breaker counts against; a cluster missing "
        "here counts the nodes observed (heartbeat within `fleet_window_s`).",
    )
    fleet_window_s: float = Field(
        default=900.0,
        gt=0,
        description="A node is in the observed fleet if it sent a heartbeat within this window.",
    )
    fleet_seed_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="On start, longest wait for the last window of heartbeats before acting.",
    )
    quarantine_max_share: float = Field(
        default=0.1,
        ge=0,
        le=1,
        description="Circuit breaker: never more than this share of a cluster's fleet drained "
        "within `quarantine_window_s` (an operator's `--force` passes it, recorded).",
    )
    quarantine_window_s: float = Field(
        default=3600.0, gt=0, description="The window `quarantine_max_share` counts drains in."
    )
    quarantine_groups: list[QuarantineGroup] = Field(
        default_factory=list,
        description='JSON: caps per node group beside the cluster\'s, e.g. [{"match": '
        '{"gpu_model": "NVIDIA A100*"}, "quarantine_max_share": 0.1}]: never more than that '
        "share of the group's nodes (those of the status topic its `match` selects: cluster, "
        "node, gpu_model, partition, feature, label, as in docs/rules.md) drained within "
        "its `quarantine_window_s` (default: `quarantine_window_s`). Every group a drain "
        "touches must allow it; `--force` passes them, recorded.",
    )
    restart_max_per_window: int = Field(
        default=3, ge=0, description="Circuit breaker: restarts of one job within the window."
    )
    restart_window_s: float = Field(
        default=3600.0, gt=0, description="The window `restart_max_per_window` counts in."
    )
    reboot_max_per_window: int = Field(
        default=2,
        ge=0,
        description="Remediation budget: reboots of one node within `reboot_window_s`, at most.",
    )
    reboot_window_s: float = Field(
        default=86400.0, gt=0, description="The window `reboot_max_per_window` counts in."
    )
    reset_max_per_window: int = Field(
        default=3,
        ge=0,
        description="Remediation budget: GPU resets of one node within `reset_window_s`, at most.",
    )
    reset_window_s: float = Field(
        default=86400.0, gt=0, description="The window `reset_max_per_window` counts in."
    )
    remediation_max_nodes: int = Field(
        default=4,
        ge=0,
        description="Remediation budget: nodes of one cluster being reset or rebooted at once "
        "(from their first rung until they are released or escalated), at most.",
    )
    remediation_window_s: float = Field(
        default=86400.0,
        gt=0,
        description="A node reset or rebooted longer ago than this, and neither released nor "
        "escalated since, no longer counts as in remediation.",
    )
    batch_hold_s: float = Field(
        default=3600.0,
        gt=0,
        description="A batched drain (a big job's suspects) keeps its place in the batch until "
        "the node was benchmarked, escalated or released, this long at most.",
    )
    batch_poll_s: float = Field(
        default=5.0, gt=0, description="How often a drain waiting for its batch reads the ledger."
    )
    backoff_scale: float = Field(
        default=1.0, ge=0, description="Multiplies every handler's retry backoff."
    )
    notify_on_success: list[str] = Field(
        default_factory=lambda: [
            "quarantine_nodes",
            "release_nodes",
            "run_benchmark",
            "reset_gpus",
            "reboot_nodes",
        ],
        description="Actions whose success is posted to the incident's Slack thread.",
    )
    benchmark_command: list[str] = Field(
        default_factory=lambda: ["python3", "-m", "actions.benchmark.runner", "--json"],
        description="How a node runs the benchmark runner; suites and args are appended.",
    )
    benchmark_args: list[str] = Field(
        default_factory=list, description="Extra runner args, e.g. thresholds `--min-tflops 600`."
    )
    benchmark_fleet_window_s: float = Field(
        default=7 * 86400.0,
        gt=0,
        description="A passing benchmark is also judged against the median of its GPU model's "
        "other nodes' passing benchmarks within this window, read from history (ClickHouse).",
    )
    benchmark_timeout_s: float = Field(
        default=900.0, gt=0, description="How long the benchmark job may run on the nodes."
    )
    gpu_reset_command: list[str] = Field(
        default_factory=lambda: ["python3", "-m", "actions.remediation.gpu_reset", "--json"],
        description="How a node runs the GPU reset (`--gpus` is appended): it resets each GPU "
        "no process uses, with `nvidia-smi -r -i N`.",
    )
    gpu_reset_timeout_s: float = Field(
        default=300.0, gt=0, description="How long the GPU reset job may run on the nodes."
    )
    gpu_inventory_command: list[str] = Field(
        default_factory=lambda: ["python3", "-m", "actions.remediation.gpu_inventory", "--json"],
        description="How a node lists its GPUs' serials for an escalation.",
    )
    hardware_service_taint: str = Field(
        default="centrality.io/hardware-service",
        description="The taint (Slurm: node feature) an escalated node gets beside its drain.",
    )
    ledger_load_timeout_s: float = Field(
        default=30.0, gt=0, description="How long reading the `action-ledger` topic back may take."
    )
    timeouts_s: dict[str, float] = Field(
        default_factory=dict,
        description="Per action, how long one call may take before it counts as a temporary "
        'failure (overrides the handler\'s own, e.g. `{"restart_job": 60}`).',
    )
    concurrency: int = Field(
        default=16, ge=1, description="Triggers handled at once (in order per subject)."
    )
    max_trigger_bytes: int = Field(
        default=256 * 1024,
        ge=1024,
        description="Larger triggers are dead-lettered (`too_large`): results must fit a message.",
    )
    stop_grace_s: float = Field(
        default=4.0,
        ge=0,
        description="On SIGTERM, how long actions under way may finish before they are abandoned.",
    )

    def allows(self, cluster: str, action: str) -> bool:
        if not self.allow:
            return True
        return action in self.allow.get(cluster, self.allow.get(ALL_CLUSTERS, []))
