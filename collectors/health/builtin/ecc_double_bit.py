"""Uncorrectable (double-bit) ECC errors or pending row remaps: the GPU needs a reset or RMA."""

from collectors.health.registry import CheckContext, CheckResult, health_check
from schemas.events.nodes import HealthStatus


@health_check("ecc_double_bit", interval_s=30, timeout_s=5)
def ecc_double_bit(ctx: CheckContext) -> CheckResult:
    bad = sorted(
        s.gpu
        for s in ctx.samples.values()
        if (s.ecc_double_bit or 0) > 0 or (s.remapped_rows_uncorrectable or 0) > 0
    )
    pending = sorted(s.gpu for s in ctx.samples.values() if s.remap_pending)
    details = {"gpus_with_dbe": bad, "remap_pending": pending}
    if bad:
        return CheckResult(HealthStatus.CRITICAL, f"double-bit ECC errors on GPUs {bad}", details)
    if pending:
        return CheckResult(HealthStatus.WARN, f"row remap pending on GPUs {pending}", details)
    return CheckResult(HealthStatus.OK, "no double-bit ECC errors", details)
