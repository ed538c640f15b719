"""RebootNodes → the scheduler reboots the drained nodes (Slurm: `scontrol reboot`). Success
means the scheduler took the request; the reboot is done when its watcher shows the nodes back,
which the brain waits for."""

from __future__ import annotations

from typing import Any

from actions.breaker import REBOOT, all_of, drained_first, remediation_share, rung_budget
from actions.context import ActionContext
from actions.registry import handles
from schemas.events import RebootNodes
from schemas.events.nodes import DRAIN_REASON_PREFIX


@handles(
    RebootNodes,
    name=REBOOT,
    guard=all_of(
        drained_first,
        rung_budget(REBOOT, "rebooted", "reboot_max_per_window", "reboot_window_s"),
        remediation_share,
    ),
    done="Reboot of {nodes} asked of the scheduler",
    not_done="{nodes} not rebooted",
)
def reboot_nodes(trigger: RebootNodes, ctx: ActionContext) -> dict[str, Any]:
    # Our prefix: the drain the node keeps through its reboot is still Centrality's.
    reason = f"{DRAIN_REASON_PREFIX} {trigger.payload.reason}"
    nodes = trigger.payload.nodes
    return {"nodes": list(nodes), **ctx.adapter.reboot(nodes, reason=reason)}
