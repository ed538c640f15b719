"""EscalateNodes → the ladder is exhausted: the nodes stay drained, marked for hardware service
(drain reason and taint), and a person is told what was tried, the XIDs, the validations'
figures and the GPUs' serials (as the node's agent read them from NVML; where it reported none,
read on the node, as far as it still answers): a webhook for a ticketing system, then the
incident's Slack thread."""

from __future__ import annotations

from typing import Any

from actions.context import ActionContext
from actions.errors import PermanentError, TemporaryError
from actions.registry import handles, named
from actions.remediation import gpu_inventory
from actions.remediation.reports import reports_of
from actions.slack.blocks import incident_message
from schemas.events import EscalateNodes
from schemas.events.nodes import DRAIN_REASON_PREFIX

INVENTORY_TIMEOUT_S = 120.0


@handles(
    EscalateNodes,
    name="escalate_nodes",
    done="{nodes} escalated for hardware service",
    not_done="{nodes} not escalated",
)
def escalate_nodes(trigger: EscalateNodes, ctx: ActionContext) -> dict[str, Any]:
    p = trigger.payload
    reason = f"{DRAIN_REASON_PREFIX} hardware service: {p.reason}"[:1000]
    done: dict[str, Any] = {
        "nodes": list(p.nodes),
        "drain": ctx.adapter.drain(p.nodes, reason=reason),
        "taint": ctx.adapter.taint(p.nodes, key=ctx.settings.hardware_service_taint, reason=reason),
    }
    serials = _serials(trigger, ctx)
    document = {
        "kind": "centrality.escalation",
        "trigger_id": str(trigger.event_id),
        "cluster": trigger.cluster,
        "nodes": list(p.nodes),
        "reason": p.reason,
        "tried": list(p.tried),
        "xids": list(p.xids),
        "benchmarks": list(p.benchmarks),
        "serials": serials,
        "hardware_service_taint": ctx.settings.hardware_service_taint,
    }
    done["webhook"] = ctx.webhook.post(document)  # before Slack: a retry posts it once
    message = incident_message(
        trigger,
        headline=f"{named(p.nodes)}: hardware service needed",
        line="{nodes}: hardware service needed",
        note=told(p, serials),
    )
    done["slack"] = ctx.notifier.post(ctx.incident, message)  # queued: a retry never redoes it
    return done | {"serials": serials}


def _serials(trigger: EscalateNodes, ctx: ActionContext) -> dict[str, Any]:
    """node → its GPUs (index, serial; UUID and PCI bus id when read on the node), or why they
    could not be read."""
    nodes = trigger.payload.nodes
    if trigger.payload.serials:  # the ladder escalates one node: the serials are its own
        boards = [{"gpu": i, "serial": s} for i, s in enumerate(trigger.payload.serials)]
        return dict.fromkeys(nodes, boards)
    try:
        run = ctx.adapter.run_on_nodes(
            nodes, ctx.settings.gpu_inventory_command, env={}, timeout_s=INVENTORY_TIMEOUT_S
        )
    except (TemporaryError, PermanentError) as exc:
        return {node: {"error": f"not read: {exc}"} for node in nodes}
    reports = reports_of(run.stdout, gpu_inventory.KIND)
    return {
        node: reports[node].get("gpus") or {"error": reports[node].get("error")}
        if node in reports
        else {"error": f"not read: no inventory (exit {run.exit_code})"}
        for node in nodes
    }


def told(p: Any, serials: dict[str, Any]) -> str:
    lines = ["*Tried, in order:*", *(f"• {t}" for t in p.tried or ("nothing: straight here",))]
    if p.xids:
        lines.append(f"*XIDs:* {', '.join(map(str, p.xids))}")
    if p.benchmarks:
        lines += ["*Validations:*", *(f"• {b}" for b in p.benchmarks)]
    for node, gpus in serials.items():
        if isinstance(gpus, list):
            boards = ", ".join(f"GPU {g['gpu']} serial {g['serial']}" for g in gpus)
            lines.append(f"*{node}:* {boards}")
        else:
            lines.append(f"*{node}:* serials {gpus.get('error')}")
    return "\n".join(lines)
