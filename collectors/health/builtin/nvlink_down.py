"""NVLink links down: collectives fall back to PCIe and the whole job slows."""

from collectors.health.registry import CheckContext, CheckResult, health_check
from schemas.events.nodes import HealthStatus


@health_check("nvlink_down", interval_s=30, timeout_s=5)
def nvlink_down(ctx: CheckContext) -> CheckResult:
    down = {s.gpu: s.nvlink_links_down for s in ctx.samples.values() if s.nvlink_links_down}
    details = {"links_down": down}
    if down:
        listed = ", ".join(f"gpu{g}:{n}" for g, n in sorted(down.items()))
        return CheckResult(HealthStatus.CRITICAL, f"NVLink links down: {listed}", details)
    if all(s.nvlink_links_down is None for s in ctx.samples.values()):
        # A PCIe card or a VM with one GPU: NVML reports no links (seen on an H200 VM).
        return CheckResult(HealthStatus.OK, "no NVLink links reported", details)
    return CheckResult(HealthStatus.OK, "all NVLink links up", details)
