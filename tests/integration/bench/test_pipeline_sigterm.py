"""A command running the workers (bench, demo) stops them when it is itself SIGTERMed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import os, signal, sys
from pathlib import Path
from centrality.pipeline import _exit_on_sigterm
_exit_on_sigterm()
try:
    os.kill(os.getpid(), signal.SIGTERM)
    signal.pause()
finally:
    Path(sys.argv[1]).write_text("stopped the workers")
"""


def test_sigterm_runs_the_cleanup_that_stops_the_workers(tmp_path: Path) -> None:
    marker = tmp_path / "cleanup"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(marker)],
        cwd=Path(__file__).parents[3],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 143, done.stderr
    assert marker.read_text() == "stopped the workers"
