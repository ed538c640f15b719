"""The pure folds: TrainingJob, Node and NodeSet state, redelivery-safe."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from schemas.events import JobState
from streams.state import node, training_job
from streams.state.forwards import forwards
from streams.state.internal import NodeJobObserved
from streams.testing import (
    T0,
    checkpoint,
    completed,
    ended,
    health,
    heartbeat,
    running,
    sample,
    xid,
)

JOB = "slurm/test/7"


def fold_job(*events: Any) -> training_job.TrainingJob:
    state = None
    for e in events:
        state = training_job.apply(state, e)
    assert state is not None
    return state


def fold_node(*events: Any) -> node.Node:
    state = None
    for e in events:
        state = node.apply(state, e)
    assert state is not None
    return state


def test_job_tracks_state_attempts_nodes_and_timestamps() -> None:
    job = fold_job(running(JOB, at_s=10), checkpoint(5, JOB, at_s=40), ended(JOB, at_s=70))
    assert job.state is JobState.FAILED
    assert job.attempt == 1 and job.nodes == ("n1", "n2")
    [attempt] = job.attempts
    assert attempt.exit_code == 1 and attempt.started_at == T0 + timedelta(seconds=10)
    assert job.first_started_at == T0 + timedelta(seconds=10)
    assert job.ended_at == T0 + timedelta(seconds=70)
    assert job.last_checkpoint_at == T0 + timedelta(seconds=40)
    assert job.failures == 1 and job.preemptions == 0 and not job.running


def test_goodput_counts_checkpointed_time_as_productive_and_the_rest_as_lost() -> None:
    job = fold_job(
        running(JOB, attempt=1, at_s=0),
        checkpoint(1, JOB, at_s=60),  # 60 s productive
        ended(JOB, attempt=1, at_s=100),  # 40 s after the checkpoint lost
        running(JOB, attempt=2, at_s=130),  # 30 s restart gap lost
        checkpoint(2, JOB, at_s=190),  # 60 s productive
        completed(JOB, at_s=195),
        ended(JOB, "SUCCEEDED", attempt=2, at_s=200, exit_code=0),  # 10 s productive
    )
    assert job.productive_s == 130 and job.lost_s == 70
    assert job.goodput == pytest.approx(130 / 200)
    assert job.restarts_seen == 1


def test_cancelled_tail_is_neither_productive_nor_lost_and_no_failure() -> None:
    job = fold_job(
        running(JOB, at_s=0), checkpoint(1, JOB, at_s=50), ended(JOB, "CANCELLED", at_s=90)
    )
    assert (job.productive_s, job.lost_s) == (50, 0)
    assert job.failures == 0 and job.cancellations == 1


def test_preemption_is_counted_but_is_not_a_failure() -> None:
    job = fold_job(running(JOB), ended(JOB, "PREEMPTED", at_s=5, exit_code=None))
    assert job.preemptions == 1 and job.failures == 0


def test_goodput_is_none_before_anything_ran() -> None:
    assert fold_job(checkpoint(1, JOB)).goodput is None


def test_redelivery_changes_nothing() -> None:
    events = [running(JOB, at_s=0), checkpoint(1, JOB, at_s=60), ended(JOB, at_s=100)]
    once = fold_job(*events)
    twice = fold_job(*events, *events)
    assert once == twice


def test_late_exit_of_an_older_attempt_does_not_overwrite_the_current_one() -> None:
    job = fold_job(
        running(JOB, 1, at_s=0), running(JOB, 2, at_s=50), ended(JOB, attempt=1, at_s=40)
    )
    assert job.state is JobState.RUNNING and job.attempt == 2
    assert [a.number for a in job.attempts] == [1]


def test_restart_decisions_are_folded_back_once() -> None:
    exit_ = ended(JOB)
    job = fold_job(exit_)
    [restart] = _restart_for(job, exit_)
    job = training_job.apply(training_job.apply(job, restart), restart)
    assert job.restarts_requested == 1 and job.restarts[0].attempt == 1


def _restart_for(job: training_job.TrainingJob, event: Any) -> list[Any]:
    from streams.rules.builtin.restart_incomplete import (
        RestartIncompleteConfig,
        restart_incomplete_exit,
    )

    return list(restart_incomplete_exit(job, event, RestartIncompleteConfig()))


def test_node_health_per_check_keeps_the_latest() -> None:
    n = fold_node(
        health("n1", "dcgm", "OK", at_s=10),
        health("n1", "disk", "WARN", at_s=11),
        health("n1", "dcgm", "CRITICAL", at_s=20),
        health("n1", "dcgm", "OK", at_s=15),  # late, older
    )
    assert {k: v.status.value for k, v in n.health.items()} == {"dcgm": "CRITICAL", "disk": "WARN"}


def test_node_heartbeat_only_moves_forward() -> None:
    n = fold_node(heartbeat("n1", at_s=30), heartbeat("n1", at_s=20))
    assert n.last_heartbeat_at == T0 + timedelta(seconds=30) and n.heartbeat_interval_s == 10


def test_gpu_counters_keep_the_maximum_and_note_when_double_bit_errors_rose() -> None:
    n = fold_node(
        sample(at_s=1, ecc_single_bit=3, ecc_double_bit=0),
        sample(at_s=2, ecc_single_bit=5, ecc_double_bit=1, remapped_rows_uncorrectable=2),
        sample(at_s=3, ecc_single_bit=4, ecc_double_bit=1),
        sample(gpu=1, at_s=3, ecc_single_bit=1),
    )
    g0 = n.gpus[0]
    assert (g0.ecc_single_bit, g0.ecc_double_bit, g0.remapped_rows_uncorrectable) == (5, 1, 2)
    assert g0.ecc_double_bit_rose_at == T0 + timedelta(seconds=2)
    assert n.gpus[1].ecc_double_bit_rose_at is None


def test_gpu_counters_are_stored_as_the_model_stored_them_and_held_without_a_dict() -> None:
    """States written before the counters became a slotted dataclass read back unchanged, and
    one node's eight GPUs cost no per-object dict (a fleet holds one per GPU)."""
    stored = (
        b'{"ecc_single_bit":1,"ecc_double_bit":0,"remapped_rows_correctable":0,'
        b'"remapped_rows_uncorrectable":0,"retired_pages":0,"ecc_double_bit_rose_at":null}'
    )
    n = fold_node(sample(at_s=1, ecc_single_bit=1))
    encoded = n.__pydantic_serializer__.to_json(n)
    assert b'"gpus":{"0":' + stored + b"}" in encoded
    again = node.Node.model_validate_json(encoded)
    assert again == n and isinstance(again.gpus[0], node.GpuCounters)
    assert not hasattr(again.gpus[0], "__dict__")


def test_xids_are_counted_once_per_event() -> None:
    e = xid(code=79)
    n = fold_node(e, e, xid(code=13))
    assert n.xid_counts == {79: 1, 13: 1} and len(n.xids) == 2


def test_node_learns_its_jobs_and_failures_from_forwarded_job_events() -> None:
    events = [running("a"), running("b"), ended("a", at_s=5), ended("b", "PREEMPTED", at_s=6)]
    derived = [d for e in events for d in forwards(e) if d.subject == "n1"]
    assert all(isinstance(d, NodeJobObserved) for d in derived)
    n = fold_node(*derived, *derived)
    assert n.jobs == {}
    assert [(f.job_id, f.attempt) for f in n.failures] == [("a", 1)]
    both = fold_node(*derived[:2]).jobs
    assert {job: (here.attempt, here.since) for job, here in both.items()} == {
        "a": (1, derived[0].occurred_at),
        "b": (1, derived[1].occurred_at),
    }
