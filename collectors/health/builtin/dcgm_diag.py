"""DCGM's quick diagnostic (`dcgmi diag -r 1 -j`), where DCGM is installed: every test's result
per GPU (`details.results`), a failure CRITICAL, a warning WARN.

Not among the default checks: add `collectors.health.builtin.dcgm_diag` to
`CENTRALITY_AGENT_CHECKS` on nodes that run nv-hostengine. Level 1 checks the deployment
(drivers, persistence mode, retired pages, …) in seconds and loads no GPU, so it may run under a
job; levels 2 and 3 stress the GPUs and belong between jobs (the benchmark, see
docs/remediation.md). The JSON is read, DCGM 3.x's or 4.x's.
"""

from __future__ import annotations

from collectors.health.dcgm import dcgmi_check
from collectors.health.registry import CheckContext, CheckResult, health_check


@health_check("dcgm_diag", interval_s=3600, timeout_s=120)
async def dcgm_diag(_: CheckContext) -> CheckResult:
    return await dcgmi_check("diag", "-r", "1", "-j")
