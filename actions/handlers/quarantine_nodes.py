"""QuarantineNodes → drain the nodes with the trigger's reason, and taint them."""

from __future__ import annotations

from typing import Any

from actions.breaker import all_of, quarantine_group_share, quarantine_share
from actions.context import ActionContext
from actions.registry import handles
from schemas.events import QuarantineNodes
from schemas.events.nodes import DRAIN_REASON_PREFIX


@handles(
    QuarantineNodes,
    name="quarantine_nodes",
    guard=all_of(quarantine_share, quarantine_group_share),
    done="Drained {nodes}",
    not_done="{nodes} not drained",
)
def quarantine_nodes(trigger: QuarantineNodes, ctx: ActionContext) -> dict[str, Any]:
    p = trigger.payload
    reason = f"{DRAIN_REASON_PREFIX} {p.reason}"
    done: dict[str, Any] = {"nodes": list(p.nodes)}
    if p.drain:
        done["drain"] = ctx.adapter.drain(p.nodes, reason=reason)
    if p.taint:
        done["taint"] = ctx.adapter.taint(p.nodes, key=p.taint, reason=reason)
    return done
