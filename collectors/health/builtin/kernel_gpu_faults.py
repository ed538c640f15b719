"""The kernel said a GPU is lost or needs a reset without naming it, in the recent window.

`NVRM: … Assertion failed: Reset required [NV_ERR_RESET_REQUIRED]`, `GPU lost from the bus
[NV_ERR_GPU_IS_LOST]`, `Back to back GSP RPC timeout detected! GPU marked for reset`: records no
XID can carry, since they name no GPU (collectors.gpu.kernel_xids). What they ask for decides:
a GPU reset or more is CRITICAL, anything less WARN.
"""

from collectors.health.registry import CheckContext, CheckResult, health_check
from schemas.events.nodes import HealthStatus
from schemas.limits import capped
from schemas.xids import XidResolution

_MESSAGE_CHARS = 300
_NEEDS = {XidResolution.RESET_GPU: "a GPU reset", XidResolution.REBOOT_NODE: "a node reboot"}


@health_check("kernel_gpu_faults", interval_s=30, timeout_s=5)
def kernel_gpu_faults(ctx: CheckContext) -> CheckResult:
    since = ctx.now() - ctx.xid_window_s
    recent = [fault for at, fault in ctx.gpu_faults if at >= since]
    if not recent:
        return CheckResult(HealthStatus.OK, "no unnamed GPU faults in the kernel log")
    asks = sorted({f.resolution.value for f in recent})
    status = HealthStatus.CRITICAL if any(f.resolution.fatal for f in recent) else HealthStatus.WARN
    last = recent[-1]
    needs = _NEEDS.get(last.resolution, last.resolution.value)
    message = f"kernel: {len(recent)} record(s) naming no GPU; needs {needs}: {last.message}"
    return CheckResult(
        status, capped(message, _MESSAGE_CHARS), {"asks": asks, "records": len(recent)}
    )
