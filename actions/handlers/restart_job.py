"""RestartJob → requeue the job from the checkpoint the trigger names."""

from __future__ import annotations

from typing import Any

from actions.adapters.base import SchedulerAdapter
from actions.registry import handles
from schemas.events import RestartJob


@handles(RestartJob, name="restart_job")
def restart_job(trigger: RestartJob, adapter: SchedulerAdapter) -> dict[str, Any]:
    return adapter.requeue(trigger.subject, checkpoint_uri=trigger.payload.checkpoint_uri)
