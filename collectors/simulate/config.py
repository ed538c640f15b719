"""What to simulate: the cluster's size, its cadences, and which faults to inject."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class SimConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    nodes: int = Field(default=16, ge=1)
    gpus: int = Field(default=8, ge=1, description="GPUs per node.")
    gpu_models: tuple[str, ...] = Field(
        default=("NVIDIA H100 80GB HBM3",),
        min_length=1,
        description="GPU models of the fleet, given to the nodes in turn (a mixed fleet).",
    )
    jobs: int = Field(default=4, ge=0, description="Jobs running at once.")
    seed: int = 0
    cluster: str = "sim"
    interval_s: float = Field(default=10.0, gt=0, description="GPU sampling interval (tick).")
    heartbeat_s: float = Field(default=30.0, gt=0)
    nodes_per_job: tuple[int, int] = (1, 8)
    job_duration_s: tuple[float, float] = (600.0, 3600.0)
    checkpoint_every_s: float = Field(default=300.0, gt=0)
    nccl_every_s: float = Field(default=60.0, gt=0)
    nccl_busbw_gbps: float = Field(default=185.0, gt=0, description="Healthy all_reduce busbw.")
    # Faults: how many of each; which nodes and jobs is drawn from the seed.
    xid_nodes: int = Field(default=0, ge=0, description="Nodes with a recurring XID 79.")
    xid_every_s: float = Field(default=300.0, gt=0)
    bad_nodes: int = Field(
        default=0,
        ge=0,
        description="Nodes with a recurring XID 79 that stay broken: their benchmark fails "
        "(`ClusterModel.unhealthy`), where an XID node's passes.",
    )
    crash_jobs: int = Field(default=0, ge=0, description="Jobs that crash without completing.")
    preempt_jobs: int = Field(default=0, ge=0, description="Jobs that are preempted.")
    slow_nccl_jobs: int = Field(default=0, ge=0, description="Jobs with NCCL at ~20% busbw.")
    lost_heartbeat_nodes: int = Field(default=0, ge=0, description="Nodes whose agent dies.")
    lost_heartbeat_at_s: float = Field(default=120.0, ge=0)
    # Interruptions from a published table of causes (collectors/simulate/taxonomy.py); with one,
    # a failed job waits for `ClusterModel.requeue` (automation's or a person's) and comes back
    # from its last checkpoint, and faulty nodes stay faulty until repaired.
    taxonomy: str | None = Field(default=None, description="`llama3-405b`, or None: no draws.")
    acceleration: float = Field(default=1.0, gt=0, description="Times the table's rate.")
    horizon_s: float = Field(default=86_400.0, gt=0, description="Span faults are drawn over.")
    repair_s: float = Field(default=86_400.0, gt=0, description="A lost node's repair.")
    maintenance_s: float = Field(default=7200.0, gt=0, description="A node's maintenance.")
    crash_after_s: float = Field(
        default=120.0, gt=0, description="A job placed on a faulty node fails this long in."
    )
    check_resend_s: float = Field(default=300.0, gt=0, description="A failing check's resend.")
    # Slow but alive nodes ("fail-slow"): a GPU throttling, its host's ranks making the whole job
    # wait. Alibaba's Falcon study (Wu et al., arXiv:2410.12588, 2024) saw them last from tens of
    # seconds to nearly ten hours on a 10,000-GPU production cluster; durations are drawn
    # log-uniform over `slow_duration_s` so both ends show.
    slow_nodes: int = Field(
        default=0, ge=0, description="Slow spells over `horizon_s`, each on a node drawn uniformly."
    )
    slow_factor: tuple[float, float] = Field(
        default=(1.3, 2.0), description="A slow host's step time, times the job's others' (drawn)."
    )
    slow_duration_s: tuple[float, float] = Field(
        default=(60.0, 36_000.0), description="How long a spell lasts (drawn log-uniform)."
    )
    restart_s: float = Field(
        default=0.0,
        ge=0,
        description="A requeued job's way back: the scheduler's requeue, its start and its "
        "checkpoint's load, before it runs again (0: at once).",
    )
    node_prefix: str = Field(default="node-", description="Node names: prefix, then a number.")
    nodes_per_switch: int = Field(
        default=32, ge=1, description="Nodes in a row under one leaf switch (`s0`, `s1`...)."
    )

    @field_validator("slow_factor", "slow_duration_s")
    @classmethod
    def _a_range(cls, value: tuple[float, float]) -> tuple[float, float]:
        if not 0 < value[0] <= value[1]:
            raise ValueError(f"{value}: expected (low, high), 0 < low <= high")
        return value

    @field_validator("slow_factor")
    @classmethod
    def _slower(cls, value: tuple[float, float]) -> tuple[float, float]:
        if value[0] < 1:
            raise ValueError(f"{value}: a slow node's steps take at least as long (factor >= 1)")
        return value
