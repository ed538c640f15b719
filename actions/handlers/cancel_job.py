"""CancelJob → end the job through its scheduler (decided only where a cluster opted in)."""

from __future__ import annotations

from typing import Any

from actions.context import ActionContext
from actions.registry import handles
from schemas.events import CancelJob


@handles(CancelJob, name="cancel_job")
def cancel_job(trigger: CancelJob, ctx: ActionContext) -> dict[str, Any]:
    return ctx.adapter.cancel(trigger.subject, reason=f"centrality: {trigger.payload.reason}")
