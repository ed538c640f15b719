"""Settings of the scheduler adapters (`CENTRALITY_SLURM_*`, `_RAY_*`, `_K8S_*`)."""

from importlib.metadata import version
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

IMAGE = "ghcr.io/centrality/centrality"


def project_image() -> str:
    """The image of this release (infra/k8s pins the same tag)."""
    return f"{IMAGE}:{version('centrality')}"


class MemorySettings(BaseSettings):
    """`CENTRALITY_MEMORY_*`: what the recording adapter (demos, tests) answers."""

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_MEMORY_", extra="ignore")

    unhealthy: dict[str, str] = Field(
        default_factory=dict, description="Node → why its simulated benchmark fails."
    )
    healed_by: dict[str, Literal["reset", "reboot"]] = Field(
        default_factory=dict,
        description="Node → the remediation rung (`reset`, `reboot`) after which its simulated "
        "benchmark passes.",
    )
    gpu_models: dict[str, str] = Field(
        default_factory=dict,
        description="Node → the GPU model (as NVML names it, e.g. `NVIDIA A100-SXM4-80GB`) of its "
        "simulated GPUs; unset: `NVIDIA H100 80GB HBM3`. Its benchmark reaches figures typical "
        "of that model.",
    )
    performs_as: dict[str, str] = Field(
        default_factory=dict,
        description="Node → the GPU model whose figures its simulated benchmark reaches instead "
        "of its own's; its runner still passes it (e.g. an H100 at an A100's figures, which the "
        "datasheet check fails).",
    )
    unhealthy_file: Path | None = Field(
        default=None,
        description="A JSON file of node → why its benchmark fails, read at each benchmark "
        "beside `unhealthy`: a simulator keeps it as its nodes break and are repaired.",
    )
    signals_file: Path | None = Field(
        default=None,
        description="A JSON file of job → the signals sent to it, oldest first, rewritten at "
        "each signal: a simulator reads it to answer a checkpoint request as its job would.",
    )


class SlurmSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_SLURM_", extra="ignore")

    cluster: str = Field(default="local", description="The `<cluster>` of `slurm/<cluster>/<id>`.")
    conf: Path | None = Field(default=None, description="`SLURM_CONF` for the Slurm commands.")
    output_dir: Path = Field(
        default=Path("/tmp/centrality-slurm"),
        description="Output of `run_on_nodes` jobs; must be readable here and writable on nodes.",
    )
    partition: str | None = Field(default=None, description="Partition of `run_on_nodes` jobs.")
    gpus_per_node: int | None = Field(
        default=None,
        ge=0,
        description="GPUs a `run_on_nodes` (benchmark) job asks for on each node; unset: all "
        "the nodes have (the fewest any of them has, from their configured GRES).",
    )
    command_timeout_s: float = Field(default=30.0, description="Longest wait for one command.")
    requeue_pending_timeout_s: float = Field(
        default=30.0, description="How long a requeued job may take to become PENDING again."
    )
    requeue_release_delay_s: float = Field(
        default=1.5,
        ge=0,
        description="How long a requeued job stays held before it is released: Slurm 22.05 "
        "revokes the credential of a job started again on a node within the second its last "
        "instance ended there, and the job fails without running.",
    )
    poll_interval_s: float = Field(default=0.25, description="Between job state polls.")
    reboot_args: list[str] = Field(
        default_factory=list,
        description='More `scontrol reboot` arguments, e.g. `["ASAP", "nextstate=RESUME"]`. '
        "Empty: a drained node stays drained through its reboot, so it is validated before "
        "it takes work again.",
    )


class RaySettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_RAY_", extra="ignore")

    address: str = Field(
        default="http://127.0.0.1:8265", description="Ray dashboard (job submission) address."
    )
    stop_timeout_s: float = Field(default=30.0, description="How long a stopped job may take.")
    poll_interval_s: float = Field(default=0.5, description="Between job status polls.")


class KubernetesSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_K8S_", extra="ignore")

    host: str | None = Field(
        default=None, description="API server URL; unset means kubeconfig or in-cluster config."
    )
    kubeconfig: Path | None = Field(default=None, description="Kubeconfig file to load.")
    verify_ssl: bool = Field(default=True, description="Verify the API server's certificate.")
    namespace: str = Field(default="default", description="Namespace of `run_on_nodes` Jobs.")
    run_image: str = Field(
        default_factory=project_image,
        description="Image of the Jobs `run_on_nodes` creates: the project's, which has the "
        "benchmark runner.",
    )
    run_gpus: int | None = Field(
        default=None,
        ge=0,
        description="GPUs each run Job requests; unset: all the node allocates (`gpu_resource`).",
    )
    gpu_resource: str = Field(
        default="nvidia.com/gpu", description="Extended resource name of a GPU on the nodes."
    )
    run_cpu: str = Field(default="4", description="CPU of a run Job (request = limit).")
    run_memory: str = Field(default="16Gi", description="Memory of a run Job (request = limit).")
    poll_interval_s: float = Field(default=1.0, description="Between Job status polls.")
    drain_timeout_s: float = Field(
        default=90.0,
        gt=0,
        description="How long a drain asks again for evictions a PodDisruptionBudget refuses "
        "(HTTP 429) before it fails naming the budget; keep it under the quarantine action's "
        "timeout (120 s unless `CENTRALITY_ACTIONS_TIMEOUTS_S` says otherwise).",
    )
    eviction_backoff_s: float = Field(
        default=1.0,
        gt=0,
        description="First pause before asking again for a refused eviction; it doubles "
        "(jittered) up to 15 s.",
    )
