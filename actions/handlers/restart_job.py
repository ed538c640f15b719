"""RestartJob → requeue the job from the checkpoint the trigger names."""

from __future__ import annotations

from typing import Any

from actions.breaker import restart_rate
from actions.context import ActionContext
from actions.registry import handles
from schemas.events import RestartJob


@handles(
    RestartJob,
    name="restart_job",
    guard=restart_rate,
    done="Requeued {subject}",
    not_done="{subject} not requeued",
)
def restart_job(trigger: RestartJob, ctx: ActionContext) -> dict[str, Any]:
    return ctx.adapter.requeue(trigger.subject, checkpoint_uri=trigger.payload.checkpoint_uri)
