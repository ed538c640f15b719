"""What people read about a job (`streams.brain.views.job_status`): its restarts add up to the
restart rule's budget, and a requeue waiting for the scheduler says since when."""

from __future__ import annotations

from streams.brain.process import Brain
from streams.brain.views import job_status, restart_budget
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.testing import JOB, T0, ended, running
from tests.factories import restarted

BUDGET = 3  # the restart rule's default max_restarts


def view(b: Brain) -> tuple[int, int | None, str | None]:
    job = b.jobs[JOB]
    status = job_status(job, restart_budget(b.engine, job))
    return status.restarts_used, status.restarts_left, status.pending


def test_restarts_used_and_left_add_up_to_the_budget_at_every_step() -> None:
    """A job restarted once showed "1/3" with `max_restarts` 3 while its requeue waited."""
    b = Brain(RuleEngine.load(StreamsSettings().rule_modules, {}))
    b.handle(running(attempt=1, at_s=0))
    assert view(b) == (0, BUDGET, None)
    for attempt in range(1, BUDGET + 2):
        triggers = b.handle(ended(attempt=attempt, at_s=attempt * 100))
        if attempt > BUDGET:
            assert triggers == []  # the budget is spent: the rule restarts it no more
            assert view(b) == (BUDGET, 0, None)
            break
        [restart] = triggers
        assert view(b) == (attempt, BUDGET - attempt, "requeue requested")
        b.handle(restarted(restart))
        used, left, pending = view(b)
        assert (used + (left or 0), pending) == (BUDGET, "next attempt")
        # Waiting for the scheduler says since when: the requeue's time, not forever FAILED.
        status = job_status(b.jobs[JOB], BUDGET)
        assert status.state == "FAILED" and status.pending_since == restart.occurred_at
        assert status.pending_since is not None and status.pending_since > T0
        b.handle(running(attempt=attempt + 1, at_s=attempt * 100 + 50))
        assert view(b) == (attempt, BUDGET - attempt, None)
