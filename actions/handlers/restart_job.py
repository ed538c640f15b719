"""RestartJob → requeue the job from the checkpoint the trigger names, off the nodes its failure
implicated (the adapter refuses when too few nodes would be left: the job is reported, not
requeued into a queue it cannot leave)."""

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
    p = trigger.payload
    # Only asked of adapters when there is something to avoid: an adapter written before
    # exclusions existed still requeues everything else.
    avoid: dict[str, Any] = {"exclude": p.exclude_nodes} if p.exclude_nodes else {}
    return ctx.adapter.requeue(trigger.subject, checkpoint_uri=p.checkpoint_uri, **avoid)
