"""Notify → a message in the incident's Slack thread; a rule's notice about a node's story is
told by the node's incident instead (its state and notes), never message by message."""

from __future__ import annotations

from typing import Any

from actions.context import ActionContext
from actions.registry import handles
from actions.slack.blocks import incident_message
from schemas.events import Notify
from schemas.events.incidents import told_by_incident


@handles(Notify, name="notify")
def notify(trigger: Notify, ctx: ActionContext) -> dict[str, Any]:
    if told_by_incident(trigger):
        return {"told": "incident"}
    p = trigger.payload
    note = "\n".join(([p.text] if p.text else []) + ([f"*Job:* `{p.job_id}`"] if p.job_id else []))
    message = incident_message(trigger, headline=p.title, note=note or None)
    return ctx.notifier.post(p.incident, message)
