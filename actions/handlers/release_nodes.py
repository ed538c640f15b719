"""ReleaseNodes → resume the nodes and remove the quarantine taint (and the hardware-service
one an escalation left)."""

from __future__ import annotations

from typing import Any

from actions.context import ActionContext
from actions.registry import handles
from schemas.events import ReleaseNodes
from schemas.events.triggers import QuarantineNodesPayload

QUARANTINE_TAINT = str(QuarantineNodesPayload.model_fields["taint"].default)


@handles(
    ReleaseNodes,
    name="release_nodes",
    done="{nodes} back in service",
    not_done="{nodes} not returned to service",
)
def release_nodes(trigger: ReleaseNodes, ctx: ActionContext) -> dict[str, Any]:
    nodes = trigger.payload.nodes
    return {
        "nodes": list(nodes),
        "resume": ctx.adapter.resume(nodes),
        "untaint": ctx.adapter.untaint(nodes, key=QUARANTINE_TAINT),
        "untaint_service": ctx.adapter.untaint(nodes, key=ctx.settings.hardware_service_taint),
    }
