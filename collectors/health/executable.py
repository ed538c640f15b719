"""Executable checks, node-problem-detector's plugin contract exactly.

Exit 0 is OK; exit 1 is a problem (NPD's NonOK), reported at the check's configured severity;
exit 2 is UNKNOWN, and so is any other code, a timeout or a crash (NPD's `default:` case).
The message is the first line of stdout. So NPD plugins (`config/plugin/*.sh` of
kubernetes/node-problem-detector, or a site's own) run here unchanged.

A problem is CRITICAL unless configured otherwise: an NPD plugin answers one yes/no question
("is the node broken in this way?"), NPD turns its NonOK into a node condition that
cordons, and acting on it still needs repeated failures (`repeated_health_failures` rule), so a
single flaky exit does not take a node out. Checks that only inform can be set to WARN.

Every file in the directory is a check named after it (without suffix), except dotfiles and
editor backups (`*~`). A file without the execute bit is reported as UNKNOWN with the reason,
never skipped in silence: a plugin that lost its mode is a check that no longer runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping
from functools import partial
from pathlib import Path

from collectors.health.registry import CheckContext, CheckFn, CheckResult, HealthCheck
from schemas.events.nodes import HealthStatus

NPD_OK, NPD_NONOK = 0, 1
MESSAGE_CHARS = 500


async def run_executable(
    path: Path, timeout_s: float, problem: HealthStatus = HealthStatus.CRITICAL
) -> CheckResult:
    proc = await asyncio.create_subprocess_exec(
        str(path),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    finally:
        # Timed out here, or cancelled by the runner's own timeout: kill the plugin's process
        # group and reap it, or it runs on and its pipes outlive the loop.
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            await proc.communicate()
    lines = out.decode(errors="replace").strip().splitlines()
    message = lines[0][:MESSAGE_CHARS] if lines else ""
    code = proc.returncode
    if code == NPD_OK:
        return CheckResult(HealthStatus.OK, message)
    if code == NPD_NONOK:
        return CheckResult(problem, message)
    return CheckResult(HealthStatus.UNKNOWN, message, {"exit_code": code})


async def _executable(
    _: CheckContext, *, path: Path, timeout_s: float, problem: HealthStatus
) -> CheckResult:
    return await run_executable(path, timeout_s, problem)


async def _not_executable(_: CheckContext, *, path: Path) -> CheckResult:
    return CheckResult(
        HealthStatus.UNKNOWN,
        f"{path} is not executable (chmod +x to run it as a check)",
        {"path": str(path)},
    )


def _is_candidate(path: Path) -> bool:
    return path.is_file() and not path.name.startswith(".") and not path.name.endswith("~")


def executable_checks(
    directory: Path,
    interval_s: float,
    timeout_s: float,
    severity: Mapping[str, HealthStatus] | None = None,
    default_severity: HealthStatus = HealthStatus.CRITICAL,
) -> list[HealthCheck]:
    """Every file in `directory` is a check named after it; `severity` maps names to a problem's."""
    if not directory.is_dir():
        return []
    severity = severity or {}
    found = []
    for path in sorted(p for p in directory.iterdir() if _is_candidate(p)):
        problem = severity.get(path.stem, default_severity)
        run: CheckFn = (
            partial(_executable, path=path, timeout_s=timeout_s, problem=problem)
            if os.access(path, os.X_OK)
            else partial(_not_executable, path=path)
        )
        found.append(HealthCheck(path.stem, run, interval_s, timeout_s))
    return found
