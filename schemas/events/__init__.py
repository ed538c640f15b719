"""Every event family of the contract; importing this package registers them all."""

from schemas.events.actions import ActionFailed, ActionStarted, ActionSucceeded
from schemas.events.checkpoints import CheckpointSaved
from schemas.events.jobs import JobExited, JobExitedPayload, JobState
from schemas.events.logs import LogSignal, LogSignalDetected
from schemas.events.triggers import RestartJob, Trigger

__all__ = [
    "ActionFailed",
    "ActionStarted",
    "ActionSucceeded",
    "CheckpointSaved",
    "JobExited",
    "JobExitedPayload",
    "JobState",
    "LogSignal",
    "LogSignalDetected",
    "RestartJob",
    "Trigger",
]
