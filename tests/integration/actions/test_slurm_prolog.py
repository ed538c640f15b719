"""The shipped Prolog, TaskProlog and Epilog under a real slurmd: every task of a resumed job
sees its checkpoint, and the controller is asked nothing about the job on the tasks' behalf
(slurmctld's own RPC counters, `sdiag`, say so)."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from tests.support.slurm import SlurmCluster

# What a per-task `squeue -j`/`scontrol show job` costs the controller.
JOB_INFO = ("REQUEST_JOB_INFO", "REQUEST_JOB_INFO_SINGLE")
URI = "s3://ckpt/run-7/step-1200"


def rpc_counts(cluster: SlurmCluster) -> dict[str, int]:
    """slurmctld's count of RPCs received, by message type."""
    out = subprocess.run(
        ["sdiag"], env=cluster.env(), capture_output=True, text=True, timeout=30, check=True
    ).stdout
    return {m[0]: int(m[1]) for m in re.findall(r"^\s*(\w+)\s+\(\s*\d+\)\s+count:(\d+)", out, re.M)}


def job_info_rpcs(cluster: SlurmCluster) -> int:
    counts = rpc_counts(cluster)
    return sum(counts.get(kind, 0) for kind in JOB_INFO)


def wait_lines(path: Path, count: int, timeout_s: float = 60.0) -> list[str]:
    """The job's output once it has `count` lines, read from the file alone (asking Slurm
    would be an RPC of our own)."""
    deadline = time.monotonic() + timeout_s
    lines: list[str] = []
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return lines
        time.sleep(0.2)
    raise AssertionError(f"{path} has {len(lines)} of {count} lines: {lines}")


def test_every_task_resumes_and_no_task_asks_the_controller(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    nodes, per_node = slurm_cluster.nodes, slurm_cluster.cpus_per_node
    out = slurm_cluster.output_dir / f"prolog-{tmp_path.name}.out"
    before = job_info_rpcs(slurm_cluster)
    job = slurm_cluster.sbatch(
        f"--nodes={nodes}",
        f"--ntasks-per-node={per_node}",
        f"--comment=centrality-resume={URI}",
        f"--output={out}",
        "--wrap",
        "srun sh -c 'echo $SLURM_PROCID $SLURMD_NODENAME $CENTRALITY_RESUME_FROM'",
    )
    tasks = [line.split(" ", 2) for line in wait_lines(out, nodes * per_node)]
    after = job_info_rpcs(slurm_cluster)

    assert sorted(int(task) for task, _, _ in tasks) == list(range(nodes * per_node))
    assert {node for _, node, _ in tasks} == set(slurm_cluster.node_names)
    assert {uri for _, _, uri in tasks} == {URI}
    assert after == before, f"{after - before} job-info RPCs for {nodes * per_node} tasks"

    # The counter does see such a call: one squeue of the job is one more.
    subprocess.run(
        ["squeue", "-h", "-j", job, "-o", "%k"],
        env=slurm_cluster.env(),
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert job_info_rpcs(slurm_cluster) == after + 1


def test_a_job_without_a_checkpoint_sees_none_and_the_epilog_cleans_up(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    out = slurm_cluster.output_dir / f"plain-{tmp_path.name}.out"
    job = slurm_cluster.sbatch(
        "--comment=a comment of the user's own",
        f"--output={out}",
        "--wrap",
        'echo "from=${CENTRALITY_RESUME_FROM:-none}"',
    )
    assert wait_lines(out, 1) == ["from=none"]
    slurm_cluster.wait_job(job, {"COMPLETED"})
    deadline = time.monotonic() + 30
    spool = slurm_cluster.run_dir / "prolog"
    while any(spool.glob("*/*.env")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(spool.glob("*/*.env")), "the epilog leaves no per-job file behind"
