"""`centrality --version` in its own process is the installed distribution's.

(Split from tests/unit/cli/test_help.py: the unit layer starts no process.)"""

from __future__ import annotations

import os
import subprocess
from importlib.metadata import version

from tests.unit.cli.test_help import CLI, ROOT


def test_version_is_the_installed_distributions() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([CLI, "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"centrality {version('centrality')}"
