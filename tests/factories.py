"""Small builders of contract events for tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from schemas.events import (
    ActionSucceeded,
    CheckpointSaved,
    JobExited,
    LogSignalDetected,
    RestartJob,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
JOB = "slurm/test/42"


def envelope(subject: str = JOB, at_s: float = 0.0) -> dict[str, Any]:
    return {
        "source": "test",
        "cluster": "test",
        "subject": subject,
        "occurred_at": T0 + timedelta(seconds=at_s),
    }


def checkpoint(step: int, subject: str = JOB, at_s: float = 0.0) -> CheckpointSaved:
    return CheckpointSaved(
        **envelope(subject, at_s), payload={"step": step, "uri": f"s3://ckpt/step-{step}"}
    )


def completed(subject: str = JOB, at_s: float = 0.0) -> LogSignalDetected:
    return LogSignalDetected(
        **envelope(subject, at_s),
        payload={"signal": "TRAINING_COMPLETE", "line": "Training Complete"},
    )


def exited(
    state: str = "FAILED",
    attempt: int = 1,
    subject: str = JOB,
    at_s: float = 0.0,
    exit_code: int | None = 1,
    nodes: tuple[str, ...] = ("n1", "n2"),
) -> JobExited:
    """The one factory of `JobExited` (`tests.unit.streams.builders.ended` puts the job first)."""
    return JobExited(
        **envelope(subject, at_s),
        payload={"state": state, "exit_code": exit_code, "attempt": attempt, "nodes": nodes},
    )


def restarted(trigger: RestartJob) -> ActionSucceeded:
    """The action worker's result of carrying `trigger` out."""
    return ActionSucceeded(
        source="actions",
        cluster=trigger.cluster,
        subject=trigger.subject,
        occurred_at=trigger.occurred_at,
        payload={
            "trigger_id": trigger.event_id,
            "trigger_type": "RestartJob",
            "action": "restart_job",
        },
    )
