from schemas.envelope import Event
from streams.state.training_job import apply
from streams.testing import JOB, checkpoint, completed, running
from tests.factories import exited


def fold(*events):  # type: ignore[no-untyped-def]
    state = None
    for e in events:
        state = apply(state, e)
    return state


def test_checkpoint_moves_forward_only() -> None:
    job = fold(checkpoint(100), checkpoint(300), checkpoint(200))
    assert job.last_checkpoint_step == 300
    assert job.last_checkpoint_uri == "s3://ckpt/step-300"


def test_completion_signal_is_remembered() -> None:
    assert fold(checkpoint(1)).completion_seen is False
    assert fold(checkpoint(1), completed()).completion_seen is True


def test_redelivered_exit_is_folded_once() -> None:
    job = fold(exited(attempt=1), exited(attempt=1), exited(attempt=2))
    assert [a.number for a in job.attempts] == [1, 2]
    assert job.attempts[0].nodes == ("n1", "n2")


def test_completion_is_taken_by_the_exit_of_its_own_attempt() -> None:
    job = fold(running(JOB, 1), completed(), exited("SUCCEEDED", attempt=1, exit_code=0))
    assert job.completed(1) and job.completion_attempt is None
    job = fold(running(JOB, 1), completed(), exited("FAILED", attempt=1), running(JOB, 2))
    assert job.completed(1) and not job.completion_seen  # attempt 2 has logged nothing yet
    assert not fold(*_two_attempts(completion_in=1)).completed(2)
    assert fold(*_two_attempts(completion_in=2)).completed(2)


def test_a_completion_line_read_after_its_exit_stays_with_that_attempt() -> None:
    # The tailer is behind the watcher: attempt 1's line arrives after its exit was folded.
    job = fold(running(JOB, 1), exited("FAILED", attempt=1), completed())
    assert job.completed(1) and job.completion_attempt is None
    job = fold(*[*job_events(), running(JOB, 2), exited("FAILED", attempt=2)])
    assert not job.completed(2)


def test_completion_before_any_attempt_is_known_goes_to_the_first_exit() -> None:
    job = fold(checkpoint(1), completed(), exited("FAILED", attempt=3))
    assert job.completed(3)


def test_a_late_exit_of_an_older_attempt_leaves_the_newer_completion_waiting() -> None:
    job = fold(running(JOB, 2), completed(), exited("FAILED", attempt=1))
    assert not job.completed(1) and job.completion_attempt == 2
    assert fold(
        running(JOB, 2),
        completed(),
        exited("FAILED", attempt=1),
        exited("SUCCEEDED", attempt=2, exit_code=0),
    ).completed(2)


def test_completed_attempt_counts_its_tail_as_productive() -> None:
    job = fold(
        running(JOB, 1, at_s=0),
        completed(at_s=50),
        exited("SUCCEEDED", attempt=1, at_s=100, exit_code=0),
    )
    assert (job.productive_s, job.lost_s) == (100.0, 0.0)


def job_events() -> list[Event]:
    return [running(JOB, 1), exited("FAILED", attempt=1), completed()]


def _two_attempts(completion_in: int) -> list[Event]:
    events: list[Event] = [running(JOB, 1)]
    if completion_in == 1:
        events.append(completed())
    events += [exited("FAILED", attempt=1), running(JOB, 2)]
    if completion_in == 2:
        events.append(completed())
    return [*events, exited("FAILED", attempt=2)]


def test_a_completion_whose_exit_never_came_does_not_pass_to_the_next_attempt() -> None:
    job = fold(running(JOB, 1), completed(), running(JOB, 2), exited("FAILED", attempt=2))
    assert not job.completed(2) and job.completion_attempt is None
