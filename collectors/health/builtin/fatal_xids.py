"""A fatal XID (fallen off the bus, uncorrectable ECC, GSP errors, ...) in the recent window."""

from collectors.health.registry import CheckContext, CheckResult, health_check
from schemas.events.nodes import HealthStatus
from schemas.xids import is_fatal


@health_check("fatal_xids", interval_s=30, timeout_s=5)
def fatal_xids(ctx: CheckContext) -> CheckResult:
    since = ctx.now() - ctx.xid_window_s
    recent = [x for at, x in ctx.xids if at >= since]
    fatal = sorted({(x.gpu, x.xid) for x in recent if is_fatal(x.xid, x.message, ctx.fatal_xids)})
    names = [f"gpu{g}:xid{x}" for g, x in fatal]
    details = {"fatal": names, "recent": len(recent)}
    if fatal:
        listed = ", ".join(names)
        return CheckResult(HealthStatus.CRITICAL, f"fatal XIDs: {listed}", details)
    if recent:
        return CheckResult(HealthStatus.WARN, f"{len(recent)} non-fatal XIDs", details)
    return CheckResult(HealthStatus.OK, "no XIDs", details)
