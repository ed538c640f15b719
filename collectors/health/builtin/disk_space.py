"""Disk space on the paths jobs write to (checkpoints, logs, /tmp)."""

from collectors.health.registry import CheckContext, CheckResult, health_check
from schemas.events.nodes import HealthStatus


@health_check("disk_space", interval_s=60, timeout_s=10)
def disk_space(ctx: CheckContext) -> CheckResult:
    used: dict[str, float] = {}
    for path in ctx.disk_paths:
        total, taken, _ = ctx.disk_usage(path)
        used[path] = round(100.0 * taken / total, 1) if total else 0.0
    worst = max(used.items(), key=lambda kv: kv[1], default=("", 0.0))
    details = {"used_pct": used}
    text = f"{worst[0]} {worst[1]}% used"
    if worst[1] >= ctx.disk_critical_pct:
        return CheckResult(HealthStatus.CRITICAL, text, details)
    if worst[1] >= ctx.disk_warn_pct:
        return CheckResult(HealthStatus.WARN, text, details)
    return CheckResult(HealthStatus.OK, text, details)
