"""What to simulate: the cluster's size, its cadences, and which faults to inject."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


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
    node_prefix: str = Field(default="node-", description="Node names: prefix, then a number.")
    nodes_per_switch: int = Field(
        default=32, ge=1, description="Nodes in a row under one leaf switch (`s0`, `s1`...)."
    )
