"""The node shows as many GPUs as it should (one fallen off the bus is critical)."""

from collectors.health.registry import CheckContext, CheckResult, health_check
from schemas.events.nodes import HealthStatus


@health_check("gpu_count", interval_s=60, timeout_s=10)
def gpu_count(ctx: CheckContext) -> CheckResult:
    seen = ctx.visible_gpus()
    details = {"visible": seen, "expected": ctx.expected_gpus}
    if ctx.expected_gpus is None:
        return CheckResult(HealthStatus.OK, f"{seen} GPUs visible (no expectation set)", details)
    if seen < ctx.expected_gpus:
        return CheckResult(
            HealthStatus.CRITICAL, f"{seen} of {ctx.expected_gpus} GPUs visible", details
        )
    return CheckResult(HealthStatus.OK, f"{seen} of {ctx.expected_gpus} GPUs visible", details)
