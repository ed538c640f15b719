"""DCGM's own health watches (`dcgmi health -c`), where DCGM is installed.

Not among the default checks: add `collectors.health.builtin.dcgm_health` to
`CENTRALITY_AGENT_CHECKS` on nodes that run nv-hostengine with health watches set
(`dcgmi health -s a`). A failure DCGM reports is CRITICAL, a warning WARN; no dcgmi, or dcgmi
that answers nothing readable, is UNKNOWN with its reason.
"""

from __future__ import annotations

import asyncio
import shutil

from collectors.health.dcgm import read_dcgm
from collectors.health.registry import CheckContext, CheckResult, health_check
from schemas.events.nodes import HealthStatus

COMMAND = ("dcgmi", "health", "-c")


@health_check("dcgm_health", interval_s=60, timeout_s=30)
async def dcgm_health(_: CheckContext) -> CheckResult:
    if shutil.which(COMMAND[0]) is None:
        return CheckResult(HealthStatus.UNKNOWN, "dcgmi not found (is DCGM installed?)")
    proc = await asyncio.create_subprocess_exec(
        *COMMAND,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    report = read_dcgm(out.decode(errors="replace"))
    if proc.returncode and not report.findings:
        reason = (err or out).decode(errors="replace").strip().splitlines()
        message = f"dcgmi exited {proc.returncode}: {reason[0] if reason else 'no output'}"
        return CheckResult(HealthStatus.UNKNOWN, message[:300])
    return CheckResult(report.status, report.summary(), report.details())
