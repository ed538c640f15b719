"""RequestCheckpoint → send the running job the signal it honours by writing a checkpoint now
(docs/jobs.md, "Asked for a checkpoint"). Done means delivered: the checkpoint itself is the
job's `CheckpointSaved`, which what follows waits for."""

from __future__ import annotations

from typing import Any

from actions.context import ActionContext
from actions.registry import handles
from schemas.events import RequestCheckpoint


@handles(
    RequestCheckpoint,
    name="request_checkpoint",
    done="Asked {subject} for a checkpoint",
    not_done="{subject} not asked for a checkpoint",
)
def request_checkpoint(trigger: RequestCheckpoint, ctx: ActionContext) -> dict[str, Any]:
    return ctx.adapter.signal(trigger.subject, signal=trigger.payload.signal)
