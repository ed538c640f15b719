"""DCGM's own health watches (`dcgmi health -c`), where DCGM is installed.

Not among the default checks: add `collectors.health.builtin.dcgm_health` to
`CENTRALITY_AGENT_CHECKS` on nodes that run nv-hostengine with health watches set
(`dcgmi health -s a`). A failure DCGM reports is CRITICAL, a warning WARN; no dcgmi, or dcgmi
that answers nothing readable, is UNKNOWN with its reason.
"""

from __future__ import annotations

from collectors.health.dcgm import dcgmi_check
from collectors.health.registry import CheckContext, CheckResult, health_check


@health_check("dcgm_health", interval_s=60, timeout_s=30)
async def dcgm_health(_: CheckContext) -> CheckResult:
    return await dcgmi_check("health", "-c")
