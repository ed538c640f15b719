"""Cancel and release through the Slurm adapter, on the real local Slurm cluster."""

from __future__ import annotations

from actions.adapters.slurm import SlurmAdapter
from tests.support.slurm import SlurmCluster


def test_a_held_followup_runs_only_once_released(
    slurm: SlurmAdapter, slurm_cluster: SlurmCluster
) -> None:
    job = slurm_cluster.sbatch("--hold", "--wrap", "echo evaluated")
    assert slurm_cluster.job_state(job) == "PENDING"
    assert slurm_cluster.job_field(job, "Reason") == "JobHeldUser"

    detail = slurm.release(f"slurm/ctest/{job}")

    assert detail["action"] == "released"
    assert slurm_cluster.wait_job(job, {"COMPLETED", "FAILED"}) == "COMPLETED"


def test_cancel_ends_an_idle_job_and_a_second_cancel_is_not_an_error(
    slurm: SlurmAdapter, slurm_cluster: SlurmCluster
) -> None:
    job = slurm_cluster.sbatch("--wrap", "sleep 300")
    slurm_cluster.wait_job(job, {"RUNNING"})

    slurm.cancel(f"slurm/ctest/{job}", reason="centrality: idle for 60 min")

    assert slurm_cluster.wait_job(job, {"CANCELLED"}) == "CANCELLED"
    slurm.cancel(f"slurm/ctest/{job}", reason="again")
