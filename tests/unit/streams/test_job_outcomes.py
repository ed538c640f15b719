"""A job's restart follows what the action worker reports: restarting once the requeue
succeeded, not when the rule asked for it."""

from __future__ import annotations

from schemas.events import RestartJob
from streams.brain.process import Brain
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.testing import JOB, checkpoint, result, running
from tests.factories import exited


def brain() -> Brain:
    return Brain(RuleEngine.load(StreamsSettings().rule_modules, {}))


def decided(b: Brain) -> RestartJob:
    b.handle(checkpoint(100, at_s=1))
    [restart] = [t for t in b.handle(exited("FAILED", at_s=2)) if isinstance(t, RestartJob)]
    return restart


def test_a_decided_restart_is_only_requested_until_the_requeue_succeeds() -> None:
    b = brain()
    restart = decided(b)
    job = b.jobs[JOB]
    assert job.restarts[-1].outcome == "requested" and not job.restarting
    b.handle(result(restart, at_s=3))
    job = b.jobs[JOB]
    assert job.restarts[-1].outcome == "requeued" and job.restarting
    b.handle(running(JOB, attempt=2, at_s=4, nodes=("n1",)))
    assert not b.jobs[JOB].restarting  # the next attempt is running: restarted, done


def test_a_failed_or_refused_requeue_says_why_and_the_job_is_not_restarting() -> None:
    b = brain()
    restart = decided(b)
    b.handle(result(restart, at_s=3, error="circuit breaker: restarted 3 times", refused=True))
    job = b.jobs[JOB]
    assert job.restarts[-1].outcome == "failed" and not job.restarting
    assert job.restarts[-1].error == "circuit breaker: restarted 3 times"


def test_dry_runs_redeliveries_and_other_triggers_change_nothing() -> None:
    b = brain()
    restart = decided(b)
    before = b.jobs[JOB]
    b.handle(result(restart, at_s=3, dry_run=True))
    assert b.jobs[JOB] is before
    other = restart.model_copy(update={"event_id": RestartJob.decide(
        cause=exited("FAILED", attempt=9), source="t", rule="r", window="w", reason="x",
        checkpoint_uri=None, attempt=9).event_id})  # fmt: skip
    b.handle(result(other, at_s=3))
    assert b.jobs[JOB] is before
    b.handle(result(restart, at_s=3))
    requeued = b.jobs[JOB]
    b.handle(result(restart, at_s=3))  # redelivered
    b.handle(result(restart, at_s=5, error="late failure report"))  # after the success
    assert b.jobs[JOB] is requeued
