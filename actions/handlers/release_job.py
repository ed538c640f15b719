"""ReleaseJob → let a held job start: the follow-up a finished job declared (completion hook)."""

from __future__ import annotations

from typing import Any

from actions.context import ActionContext
from actions.registry import handles
from schemas.events import ReleaseJob


@handles(ReleaseJob, name="release_job")
def release_job(trigger: ReleaseJob, ctx: ActionContext) -> dict[str, Any]:
    return {**ctx.adapter.release(trigger.subject), "after": trigger.payload.after}
