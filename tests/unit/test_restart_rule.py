import pytest

from schemas.events import RestartJob
from streams.rules.builtin.restart_incomplete import (
    RestartIncompleteConfig,
    restart_incomplete_exit,
)
from streams.rules.registry import RuleConfigError, RuleEngine
from streams.state.training_job import apply
from streams.testing import JOB, checkpoint, completed, running
from tests.factories import exited

CONFIG = RestartIncompleteConfig()


def decide(*events, config=CONFIG):  # type: ignore[no-untyped-def]
    state = None
    for e in events:
        state = apply(state, e)
    return list(restart_incomplete_exit(state, events[-1], config))


def test_crash_after_checkpoint_restarts_from_it() -> None:
    [trigger] = decide(checkpoint(1200), exited("FAILED"))
    assert isinstance(trigger, RestartJob)
    assert trigger.payload.checkpoint_uri == "s3://ckpt/step-1200"
    assert trigger.payload.checkpoint_step == 1200
    assert trigger.subject == "slurm/test/42"


def test_completed_job_is_left_alone_even_if_exit_code_is_odd() -> None:
    assert decide(checkpoint(1), completed(), exited("FAILED")) == []


def test_cancelled_job_is_left_alone() -> None:
    assert decide(checkpoint(1), exited("CANCELLED")) == []


def test_an_attempt_the_scheduler_followed_with_another_is_left_alone() -> None:
    # Slurm requeued it itself, or a watcher new to the cluster tells of a job's earlier
    # attempts: a requeue now would end the attempt that followed, or revive a cancelled job.
    requeued = exited("PREEMPTED", exit_code=None)
    requeued = requeued.model_copy(
        update={"payload": requeued.payload.model_copy(update={"requeued": True})}
    )
    assert decide(checkpoint(1), requeued) == []
    assert len(decide(checkpoint(1), exited("PREEMPTED", exit_code=None))) == 1


def test_clean_exit_without_completion_is_left_alone_by_default() -> None:
    # Most trainers print their own last line; restarting a finished job redoes its work.
    assert decide(checkpoint(5), exited("SUCCEEDED", exit_code=0)) == []
    assert decide(exited("UNKNOWN", exit_code=0)) == []


def test_clean_exit_without_completion_is_restarted_when_configured() -> None:
    # Where exit 0 without the completion line is how silent data-loader deaths look.
    config = RestartIncompleteConfig(on_success_without_marker="restart")
    [trigger] = decide(checkpoint(5), exited("SUCCEEDED", exit_code=0), config=config)
    assert trigger.payload.checkpoint_step == 5
    assert "SUCCEEDED" in trigger.payload.reason


def test_a_crash_is_restarted_whatever_the_success_policy() -> None:
    assert len(decide(exited("FAILED", exit_code=1))) == 1
    assert len(decide(exited("UNKNOWN", exit_code=137))) == 1


def test_completion_of_an_earlier_attempt_does_not_spare_a_later_crash() -> None:
    events = [
        running(JOB, 1),
        completed(),
        exited("FAILED", attempt=1),
        running(JOB, 2),
        checkpoint(300),
        exited("FAILED", attempt=2),
    ]
    [trigger] = decide(*events)
    assert (trigger.payload.attempt, trigger.payload.checkpoint_step) == (2, 300)


def test_completion_of_the_attempt_itself_spares_its_odd_exit() -> None:
    assert (
        decide(
            running(JOB, 1),
            exited("FAILED", attempt=1),
            running(JOB, 2),
            completed(),
            exited("FAILED", attempt=2),
        )
        == []
    )


def test_no_checkpoint_restarts_from_scratch() -> None:
    [trigger] = decide(exited("FAILED"))
    assert trigger.payload.checkpoint_uri is None
    assert "scratch" in trigger.payload.reason


def test_max_restarts_is_respected() -> None:
    config = RestartIncompleteConfig(max_restarts=2)
    assert decide(exited(attempt=2), config=config)
    assert decide(exited(attempt=3), config=config) == []


def test_same_attempt_gives_same_trigger_id() -> None:
    first = decide(checkpoint(1), exited(attempt=1))
    again = decide(checkpoint(1), exited(attempt=1))
    other = decide(checkpoint(1), exited(attempt=2))
    assert first[0].event_id == again[0].event_id != other[0].event_id


def test_engine_loads_modules_and_validates_config() -> None:
    engine = RuleEngine.load(
        ["streams.rules.builtin.restart_incomplete"],
        {"restart_incomplete_exit": {"max_restarts": 0}},
    )
    state = apply(None, exited(attempt=1))
    assert engine.evaluate(state, exited(attempt=1)) == []
    with pytest.raises(RuleConfigError, match="on_success_without_marker"):
        RuleEngine.load([], {"restart_incomplete_exit": {"on_success_without_marker": "maybe"}})
    with pytest.raises(RuleConfigError, match="max_restarts"):
        RuleEngine.load([], {"restart_incomplete_exit": {"max_restarts": -1}})
    with pytest.raises(RuleConfigError, match="configures no such rule: 'nope'"):
        RuleEngine.load([], {"nope": {}})
    with pytest.raises(RuleConfigError, match=r"no rule module 'no\.such\.module'"):
        RuleEngine.load(["no.such.module"], {})
