from streams.state.training_job import apply
from tests.factories import checkpoint, completed, exited


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
