"""The Slurm adapter against a real local 3-node Slurm cluster."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from actions.adapters import slurm_window
from actions.adapters.settings import SlurmSettings
from actions.adapters.slurm import SlurmAdapter
from actions.adapters.slurm_cli import SlurmCli
from actions.errors import PermanentError, TemporaryError
from tests.support.slurm import SlurmCluster

pytestmark = pytest.mark.integration

# Fails unless it was given a checkpoint: the first run fails, the requeued one resumes.
TRAIN = """#!/bin/sh
echo "run=${SLURM_RESTART_COUNT:-0} node=$SLURMD_NODENAME resume=${CENTRALITY_RESUME_FROM:-none}"
[ -n "$CENTRALITY_RESUME_FROM" ] && echo "Training Complete" && exit 0
exit 3
"""


def test_requeue_runs_a_failed_job_again_from_the_checkpoint(
    slurm: SlurmAdapter,
    slurm_cluster: SlurmCluster,
    tmp_path: Path,
) -> None:
    script = tmp_path / "train.sh"
    script.write_text(TRAIN)
    out = slurm_cluster.output_dir / "train-%j.out"
    job = slurm_cluster.sbatch("--requeue", "--open-mode=append", f"--output={out}", str(script))
    assert slurm_cluster.wait_job(job, {"FAILED", "COMPLETED"}) == "FAILED"

    detail = slurm.requeue(f"slurm/ctest/{job}", checkpoint_uri="s3://ckpt/run-7/step-1200")

    assert detail["job_id"] == f"slurm/ctest/{job}"
    assert slurm_cluster.wait_job(job, {"COMPLETED", "FAILED"}, timeout_s=20) == "COMPLETED"
    assert slurm_cluster.job_field(job, "Restarts") == "1"
    logs = slurm.job_logs(f"slurm/ctest/{job}").splitlines()
    assert logs[0].startswith("run=0") and logs[0].endswith("resume=none")
    assert logs[1].startswith("run=1") and logs[1].endswith("resume=s3://ckpt/run-7/step-1200")
    assert logs[-1] == "Training Complete"
    assert slurm.job_logs(f"slurm/ctest/{job}", tail_lines=1) == "Training Complete\n"

    slurm.requeue(f"slurm/ctest/{job}", checkpoint_uri=None)  # from scratch: no resume marker
    assert slurm_cluster.wait_job(job, {"COMPLETED", "FAILED"}, timeout_s=20) == "FAILED"
    assert slurm.job_logs(f"slurm/ctest/{job}", tail_lines=1).endswith("resume=none\n")


def test_a_cancelled_job_is_not_brought_back(
    slurm: SlurmAdapter, slurm_cluster: SlurmCluster
) -> None:
    # Slurm itself would requeue it: a late decision must not undo whoever cancelled it.
    job = slurm_cluster.sbatch("--requeue", "--wrap", "sleep 60")
    slurm_cluster.wait_job(job, {"RUNNING"})
    slurm.cancel(f"slurm/ctest/{job}", reason="a person changed their mind")
    assert slurm_cluster.wait_job(job, {"CANCELLED"}) == "CANCELLED"
    with pytest.raises(PermanentError, match=f"job {job} was cancelled"):
        slurm.requeue(f"slurm/ctest/{job}", checkpoint_uri="s3://ckpt/step-1")
    assert slurm_cluster.job_state(job) == "CANCELLED"
    assert slurm_cluster.job_field(job, "Restarts") == "0"


@pytest.mark.parametrize("job_id", ["ray/raysubmit_1", "slurm/other/12", "slurm/ctest/x", "12"])
def test_a_foreign_job_id_is_permanent(slurm: SlurmAdapter, job_id: str) -> None:
    with pytest.raises(PermanentError):
        slurm.requeue(job_id, checkpoint_uri=None)


def test_an_unknown_job_is_permanent(slurm: SlurmAdapter) -> None:
    with pytest.raises(PermanentError, match="Invalid job id"):
        slurm.requeue("slurm/ctest/987654", checkpoint_uri=None)


def test_an_unreachable_controller_is_temporary(
    slurm_cluster: SlurmCluster,
    tmp_path: Path,
) -> None:
    conf = tmp_path / "slurm.conf"
    text = slurm_cluster.conf.read_text()
    conf.write_text(
        "\n".join(
            "SlurmctldPort=9" if line.startswith("SlurmctldPort=") else line
            for line in text.splitlines()
        )
    )
    adapter = SlurmAdapter(SlurmSettings(cluster="ctest", conf=conf, command_timeout_s=1))
    with pytest.raises(TemporaryError):
        adapter.drain(["node1"], reason="x")


def test_drain_with_a_reason_shows_in_sinfo_and_resume_undoes_it(
    slurm: SlurmAdapter,
    slurm_cluster: SlurmCluster,
) -> None:
    slurm.drain(["node2", "node3"], reason="centrality: 5 failures on these nodes")
    try:
        for node in ("node2", "node3"):
            assert slurm_cluster.node_field(node, "%T") == "drained"
            assert slurm_cluster.node_field(node, "%E") == "centrality: 5 failures on these nodes"
        assert slurm_cluster.node_field("node1", "%T") == "idle"
    finally:
        detail = slurm.resume(["node2", "node3"])
    assert detail["resumed"] == ["node2", "node3"]
    # `idle*` until the controller's next ping: resuming marks a node not-responding in 22.05.
    assert slurm_cluster.node_field("node2", "%T").rstrip("*") == "idle"
    assert slurm.resume(["node2"])["already_up"] == ["node2"]


def test_drain_of_an_unknown_node_is_permanent(slurm: SlurmAdapter) -> None:
    with pytest.raises(PermanentError, match="Invalid node name"):
        slurm.drain(["node99"], reason="x")


def test_taint_is_a_node_feature(
    slurm: SlurmAdapter,
    slurm_cluster: SlurmCluster,
) -> None:
    slurm.taint(["node1"], key="centrality.io/quarantined", reason="xid 79")
    slurm.taint(["node1"], key="centrality.io/suspect", reason="slow")
    try:
        features = slurm_cluster.node_field("node1", "%f").split(",")
        assert sorted(features) == ["centrality.io/quarantined", "centrality.io/suspect"]
    finally:
        slurm.untaint(["node1"], key="centrality.io/quarantined")
        slurm.untaint(["node1"], key="centrality.io/suspect")
    assert slurm_cluster.node_field("node1", "%f") == "(null)"


def test_run_on_nodes_runs_once_on_exactly_those_nodes(slurm: SlurmAdapter) -> None:
    result = slurm.run_on_nodes(
        ["node1", "node3"],
        ["sh", "-c", 'echo "$SLURMD_NODENAME $BENCH_SUITE $(ls /dev/null)"'],
        env={"BENCH_SUITE": "gpu,nccl"},
        timeout_s=30,
    )
    assert result.exit_code == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [
        "node1 gpu,nccl /dev/null",
        "node3 gpu,nccl /dev/null",
    ]
    assert result.job_id is not None and result.job_id.startswith("slurm/ctest/")


def test_run_on_nodes_gets_every_gpu_of_the_nodes(
    slurm: SlurmAdapter, slurm_cluster: SlurmCluster
) -> None:
    result = slurm.run_on_nodes(
        ["node1", "node3"],
        ["sh", "-c", 'echo "$SLURMD_NODENAME ${CUDA_VISIBLE_DEVICES:-none}"'],
        env={},
        timeout_s=30,
    )
    assert result.exit_code == 0, result.stderr
    every = ",".join(str(i) for i in range(slurm_cluster.gpus_per_node))
    assert sorted(result.stdout.splitlines()) == [f"node1 {every}", f"node3 {every}"]
    assert result.job_id is not None
    job = result.job_id.rsplit("/", 1)[1]
    assert f"gpu:{slurm_cluster.gpus_per_node}" in slurm_cluster.job_field(job, "TresPerNode")


def test_run_on_nodes_asks_for_the_gpus_it_is_told(
    slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in slurm_cluster.adapter_env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("CENTRALITY_SLURM_GPUS_PER_NODE", "1")
    result = SlurmAdapter().run_on_nodes(
        ["node2"], ["sh", "-c", 'echo "${CUDA_VISIBLE_DEVICES:-none}"'], env={}, timeout_s=30
    )
    assert (result.exit_code, result.stdout) == (0, "0\n"), result.stderr


def test_run_on_a_drained_node_runs_there_and_leaves_it_drained(
    slurm: SlurmAdapter,
    slurm_cluster: SlurmCluster,
) -> None:
    slurm.drain(["node2"], reason="quarantined by centrality")
    try:
        result = slurm.run_on_nodes(
            ["node2"], ["sh", "-c", 'echo "$SLURMD_NODENAME"; exit 4'], env={}, timeout_s=30
        )
        assert (result.exit_code, result.stdout) == (4, "node2\n")
        assert slurm_cluster.node_field("node2", "%T") == "drained"
        assert slurm_cluster.node_field("node2", "%E") == "quarantined by centrality"
        assert "No reservations" in slurm_cluster.scontrol("show", "reservation")
    finally:
        slurm.resume(["node2"])


def test_a_node_drained_by_someone_during_the_run_stays_drained_for_their_reason(
    slurm: SlurmAdapter,
    slurm_cluster: SlurmCluster,
) -> None:
    slurm.drain(["node2", "node3"], reason="quarantined by centrality")
    # The run itself does what a person would do meanwhile: drain node2 for a reason of theirs.
    person = "scontrol update nodename=node2 state=drain 'reason=PSU swap, ticket 42'"
    try:
        result = slurm.run_on_nodes(["node2", "node3"], ["sh", "-c", person], env={}, timeout_s=30)
        assert result.exit_code == 0, result.stderr
        assert slurm_cluster.node_field("node2", "%T") == "drained"
        assert slurm_cluster.node_field("node2", "%E") == "PSU swap, ticket 42"
        assert slurm_cluster.node_field("node3", "%T") == "drained"
        assert slurm_cluster.node_field("node3", "%E") == "quarantined by centrality"
        assert "No reservations" in slurm_cluster.scontrol("show", "reservation")
    finally:
        slurm.resume(["node2", "node3"])


def test_a_node_resumed_by_someone_as_the_window_opens_is_left_in_service(
    slurm: SlurmAdapter,
    slurm_cluster: SlurmCluster,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Someone resumes the node between the adapter's first look and its reservation: the run
    goes ahead outside any window, and the node is not drained again afterwards."""
    slurm.drain(["node2"], reason="quarantined by centrality")
    looks: list[Sequence[str]] = []

    def drained(cli: SlurmCli, nodes: Sequence[str]) -> dict[str, str]:
        looks.append(nodes)
        if len(looks) == 2:  # the reservation holds the node now; the person was quicker
            slurm_cluster.scontrol("update", "nodename=node2", "state=resume")
        return first_look(cli, nodes)

    first_look = slurm_window._drained
    monkeypatch.setattr(slurm_window, "_drained", drained)
    result = slurm.run_on_nodes(
        ["node2"], ["sh", "-c", 'echo "in:${SLURM_JOB_RESERVATION:-}"'], env={}, timeout_s=30
    )
    assert (result.exit_code, result.stdout, len(looks)) == (0, "in:\n", 2), result.stderr
    assert slurm_cluster.node_field("node2", "%T") == "idle"
    assert "No reservations" in slurm_cluster.scontrol("show", "reservation")
