"""`make test` runs two workers with `--dist loadgroup`: tests marked with one `xdist_group`
(those sharing a Slurm cluster, a Kubernetes API server, a module's one bench run) must run on
one worker. Some pytest and pytest-xdist pairs drop the groups without a word (pytest-xdist#1386):
a run that is slower and flakier, never red. This checks the pinned pair still groups."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

GROUPED = """
import pytest

pytestmark = pytest.mark.xdist_group("one")


@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    pass
"""


def test_tests_of_one_group_run_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    two_workers = ("-n", "2", "--dist", "loadgroup", "-v", "-o", "addopts=")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *two_workers, "test_grouped.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    workers = set(re.findall(r"\[(gw\d+)\] \[\s*\d+%\] PASSED", run.stdout))
    assert len(workers) == 1, run.stdout[-2000:]
