"""Executable checks: exit 0/1/2 → OK/WARN/CRITICAL, first line of stdout is the message."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

from collectors.health.registry import CheckContext, CheckResult, HealthCheck
from schemas.events.nodes import HealthStatus

_BY_EXIT = {0: HealthStatus.OK, 1: HealthStatus.WARN, 2: HealthStatus.CRITICAL}


async def run_executable(path: Path, timeout_s: float) -> CheckResult:
    proc = await asyncio.create_subprocess_exec(
        str(path),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        await proc.wait()
        raise
    lines = out.decode(errors="replace").strip().splitlines()
    message = lines[0][:500] if lines else ""
    status = _BY_EXIT.get(proc.returncode or 0, HealthStatus.UNKNOWN)
    details = {} if proc.returncode in _BY_EXIT else {"exit_code": proc.returncode}
    return CheckResult(status, message, details)


def executable_checks(directory: Path, interval_s: float, timeout_s: float) -> list[HealthCheck]:
    """Every executable file in `directory` is a check named after it."""
    if not directory.is_dir():
        return []
    found = []
    for path in sorted(directory.iterdir()):
        if path.is_file() and os.access(path, os.X_OK):

            async def run(_: CheckContext, path: Path = path) -> CheckResult:
                return await run_executable(path, timeout_s)

            found.append(HealthCheck(path.stem, run, interval_s, timeout_s))
    return found
