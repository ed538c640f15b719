"""A checkpoint asked of a job on the real local Slurm cluster: the signal reaches the batch
script's trap and the srun step's handler, once each, and the job runs on; a job that is not
running is not signalled."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from actions.adapters.slurm import SlurmAdapter
from actions.errors import PermanentError
from tests.support.slurm import SlurmCluster

# The step's trainer: a handler first, then "ready", then it trains (sleeps) until cancelled.
TRAINER = """\
import signal, sys, time
marks = sys.argv[1]
def asked(signum, frame):
    with open(marks, "a") as f:
        f.write(f"step {signal.Signals(signum).name}\\n")
signal.signal(signal.SIGUSR1, asked)
signal.signal(signal.SIGTERM, asked)
open(marks + ".ready", "w").close()
while True:
    time.sleep(0.1)
"""


def batch_script(sig: str, trainer: Path, marks: Path) -> str:
    # The shell waits in `wait`, where a trapped signal runs its trap at once; `wait` then
    # returns, so it waits again for as long as the step runs.
    return f"""#!/bin/bash
trap 'echo "batch {sig}" >> {marks}' {sig}
srun {sys.executable} {trainer} {marks} &
while kill -0 $! 2>/dev/null; do wait $!; done
"""


def eventually(check: Callable[[], bool], timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.mark.parametrize("sig", ["USR1", "TERM"])
def test_the_batch_script_and_its_step_each_get_the_signal_once(
    slurm: SlurmAdapter, slurm_cluster: SlurmCluster, tmp_path: Path, sig: str
) -> None:
    marks, trainer, script = tmp_path / "marks", tmp_path / "trainer.py", tmp_path / "job.sh"
    trainer.write_text(TRAINER)
    script.write_text(batch_script(sig, trainer, marks))
    job = slurm_cluster.sbatch(f"--output={tmp_path}/%j.out", str(script))
    eventually(Path(f"{marks}.ready").exists)  # the step's handler is in place

    detail = slurm.signal(f"slurm/ctest/{job}", signal=sig)

    assert detail["action"] == "signalled"
    eventually(lambda: marks.exists() and len(marks.read_text().splitlines()) >= 2)
    time.sleep(1)  # a second delivery (srun forwarding it too) would land by now
    assert sorted(marks.read_text().splitlines()) == [f"batch {sig}", f"step SIG{sig}"]
    # TERM included: the step was not killed, the job runs on.
    assert slurm_cluster.job_state(job) == "RUNNING"
    assert f"StepId={job}.0 " in slurm_cluster.scontrol("show", "step", f"{job}.0")
    slurm.cancel(f"slurm/ctest/{job}", reason="test over")


def test_a_job_that_is_not_running_is_not_signalled(
    slurm: SlurmAdapter, slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    done = slurm_cluster.sbatch(f"--output={tmp_path}/%j.out", "--wrap", "true")
    slurm_cluster.wait_job(done, {"COMPLETED"})
    held = slurm_cluster.sbatch(f"--output={tmp_path}/%j.out", "--hold", "--wrap", "true")

    with pytest.raises(PermanentError, match="is COMPLETED, not running"):
        slurm.signal(f"slurm/ctest/{done}", signal="USR1")
    with pytest.raises(PermanentError, match="is PENDING, not running"):
        slurm.signal(f"slurm/ctest/{held}", signal="USR1")
    slurm.cancel(f"slurm/ctest/{held}", reason="test over")
