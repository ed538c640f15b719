"""Whom a job's hosts wait for at their collectives (`streams.state.waits`): the thresholds, the
bounds, and a new attempt starting afresh."""

from __future__ import annotations

import pytest

from streams.state.waits import KEYS_KEPT, WAIT_MIN_US, WAITED, Waits, waits_after
from streams.testing import JOB, Story, collectives_timed, ended, running, step_times

HOSTS = ("n1", "n2", "n3")


def _told(
    times: dict[str, float], at_s: float = 60.0, communicator: str = "0x9e7a479f95a66c"
) -> Waits:
    w = Waits()
    for host, exec_us in times.items():
        e = collectives_timed(host, exec_us, at_s=at_s, communicator=communicator)
        w = waits_after(w, e.payload, e.occurred_at) or w
    return w


def test_the_host_that_starts_last_is_waited_for_and_the_others_are_not() -> None:
    w = _told({"n1": 40_000.0, "n2": 38_000.0, "n3": 4_000.0})
    assert list(w.waited) == ["n3"]
    n3 = w.waited["n3"]
    assert (n3.ratio, n3.wait_ms, n3.collective) == (9.75, 35.0, "AllReduce")


def test_the_collective_waited_at_is_named_whatever_the_communicators_id_holds() -> None:
    w = _told({"n1": 40_000.0, "n2": 38_000.0, "n3": 4_000.0}, communicator="job-7/pp/0")
    assert w.waited["n3"].collective == "AllReduce"


@pytest.mark.parametrize(
    ("theirs", "mine"),
    [
        (WAITED * 10_000.0 - 1, 10_000.0),  # not enough longer, however long the wait
        (WAIT_MIN_US * 3 - 1, WAIT_MIN_US * 2),  # under the ratio and under a millisecond
        (WAIT_MIN_US - 1, 1.0),  # many times longer, but under a millisecond of waiting
    ],
)
def test_under_either_threshold_no_one_is_waited_for(theirs: float, mine: float) -> None:
    assert _told({"n1": theirs, "n2": theirs, "n3": mine}).waited == {}


def test_a_host_that_stops_being_late_stops_being_waited_for_and_since_holds_meanwhile() -> None:
    w = _told({"n1": 40_000.0, "n2": 40_000.0, "n3": 4_000.0}, at_s=60.0)
    e = collectives_timed("n3", 3_000.0, at_s=120.0)
    w = waits_after(w, e.payload, e.occurred_at) or w
    assert w.waited["n3"].since.timestamp() - e.occurred_at.timestamp() == -60.0
    e = collectives_timed("n3", 39_000.0, at_s=180.0)
    w = waits_after(w, e.payload, e.occurred_at) or w
    assert w.waited == {}


def test_keys_are_bounded_and_the_newest_kept() -> None:
    w = Waits()
    for i in range(KEYS_KEPT + 3):
        e = collectives_timed("n1", 1.0, collective=f"C{i}")
        w = waits_after(w, e.payload, e.occurred_at) or w
    assert len(w.times) == KEYS_KEPT
    assert next(iter(w.times)).endswith(f"C3/{1 << 28}")


def test_a_new_attempt_starts_afresh() -> None:
    story = Story()
    story.tell(running(nodes=HOSTS, at_s=0.0))
    story.tell(
        *(collectives_timed(h, t, at_s=60.0) for h, t in zip(HOSTS, (4e4, 4e4, 2e3), strict=True))
    )
    assert list(story.jobs[JOB].waits.waited) == ["n3"]
    story.tell(running(attempt=2, nodes=HOSTS, at_s=120.0))
    assert story.jobs[JOB].waits == Waits()


def test_an_attempts_pace_is_forgotten_at_its_end_and_a_late_summary_changes_nothing() -> None:
    story = Story()
    story.tell(running(nodes=HOSTS, at_s=0.0))
    story.tell(*(step_times(h, 1.0, at_s=60.0) for h in HOSTS))
    story.tell(
        *(collectives_timed(h, t, at_s=60.0) for h, t in zip(HOSTS, (4e4, 4e4, 2e3), strict=True))
    )
    job = story.jobs[JOB]
    assert job.steps and job.waits.waited and job.pace_best_s == 1.0
    story.tell(ended(state="SUCCEEDED", nodes=HOSTS, at_s=90.0))
    # The tailer sends what it holds when the job's log ends: after the exit, often.
    story.tell(step_times("n1", 1.0, at_s=95.0), collectives_timed("n1", 4e4, at_s=95.0))
    job = story.jobs[JOB]
    assert (job.steps, job.waits, job.pace_best_s, job.pace_told) == ({}, Waits(), None, {})
    assert not job.resident
