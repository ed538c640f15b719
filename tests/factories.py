"""Builders of contract events for tests beyond what `streams.testing` ships to rule authors."""

from __future__ import annotations

from schemas.events import ActionSucceeded, JobExited, RestartJob
from streams.testing import JOB, ended


def exited(
    state: str = "FAILED",
    attempt: int = 1,
    subject: str = JOB,
    at_s: float = 0.0,
    exit_code: int | None = 1,
    nodes: tuple[str, ...] = ("n1", "n2"),
) -> JobExited:
    """`streams.testing.ended`, with the state first: most tests are about how a job ended."""
    return ended(subject, state, attempt, at_s, nodes, exit_code)


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
