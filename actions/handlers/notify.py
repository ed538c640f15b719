"""Notify → a message in the incident's Slack thread."""

from __future__ import annotations

from typing import Any

from actions.context import ActionContext
from actions.registry import handles
from actions.slack.blocks import incident_message
from schemas.events import Notify


@handles(Notify, name="notify")
def notify(trigger: Notify, ctx: ActionContext) -> dict[str, Any]:
    p = trigger.payload
    done = {k: v for k, v in (("text", p.text), ("job", p.job_id)) if v}
    return ctx.notifier.post(p.incident, incident_message(trigger, headline=p.title, done=done))
