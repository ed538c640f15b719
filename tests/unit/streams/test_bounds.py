"""No table value outgrows a Kafka record: the largest inputs folded, every value stays under
`STATE_BYTES_MAX` (the message limit is 1,000,000 bytes), and trimming never counts a
redelivered event twice."""

from __future__ import annotations

import uuid
from typing import Any

from schemas import limits
from schemas.events import CheckpointSaved, NodeHealthChecked, RestartJob
from streams.state import node, node_set, training_job
from streams.state.bounds import ATTEMPTS_KEPT, ID_CHARS_MAX, RESTARTS_KEPT, STATE_BYTES_MAX
from streams.state.forwards import NODES_FORWARDED_MAX, forwards
from streams.state.internal import (
    NodeActionReported,
    NodeDecided,
    NodeJobObserved,
    NodeSetFailed,
    node_set_key,
)
from streams.testing import ended, envelope, running, sample, xid


def worst_id(n: int, length: int = ID_CHARS_MAX) -> str:
    """An id of the longest length the contract allows, of characters JSON escapes to 6 bytes."""
    head = f"{n}-"
    return head + "\x00" * (length - len(head))


NODES = tuple(worst_id(n, limits.NODE_NAME) for n in range(NODES_FORWARDED_MAX + 100))
JOB = worst_id(0)


def size(state: Any) -> int:
    return len(state.__pydantic_serializer__.to_json(state))


def test_a_job_with_many_huge_attempts_stays_bounded() -> None:
    state = None
    for attempt in range(1, 3 * ATTEMPTS_KEPT):
        state = training_job.apply(state, running(JOB, attempt, at_s=attempt, nodes=NODES))
        state = training_job.apply(state, ended(JOB, attempt=attempt, at_s=attempt, nodes=NODES))
        restart = RestartJob.model_validate(
            {
                **envelope(JOB, attempt),
                "payload": {
                    "rule": "r",
                    "window": "w",
                    "caused_by": [uuid.uuid4()],
                    "reason": "x" * limits.TEXT,
                    "attempt": attempt,
                    "checkpoint_uri": None,
                    "checkpoint_step": None,
                },
            }
        )
        state = training_job.apply(state, restart)
        uri = "s3://" + "\x00" * (limits.TEXT - 5)
        saved = CheckpointSaved(**envelope(JOB, attempt), payload={"step": attempt, "uri": uri})
        state = training_job.apply(state, saved)
    assert state is not None
    assert len(state.attempts) == ATTEMPTS_KEPT
    assert len(state.restarts) == RESTARTS_KEPT
    assert state.failures == 3 * ATTEMPTS_KEPT - 1
    assert size(state) <= STATE_BYTES_MAX, size(state)


def test_trimmed_attempts_and_restarts_are_not_folded_again() -> None:
    state = None
    for attempt in range(1, ATTEMPTS_KEPT + 5):
        state = training_job.apply(state, ended("j", attempt=attempt, at_s=attempt))
    assert state is not None
    again = training_job.apply(state, ended("j", attempt=1, at_s=1))  # redelivered, trimmed
    assert again is state


def test_a_node_hearing_everything_stays_bounded() -> None:
    name = worst_id(1, limits.NODE_NAME)
    state = None
    for i in range(2000):
        gpu = i % limits.GPUS_PER_NODE
        state = node.apply(
            state, sample(name, gpu=gpu, at_s=i, ecc_single_bit=1, utilization_pct=i % 2)
        )
        state = node.apply(state, xid(name, code=i, at_s=i, gpu=gpu))
        check = NodeHealthChecked(
            **envelope(name, i),
            payload={
                "check": worst_id(i, limits.NAME),
                "status": "CRITICAL",
                "message": "\x00" * limits.TEXT,
            },
        )
        state = node.apply(state, check)
        for running_ in (True, False):
            state = node.apply(
                state,
                NodeJobObserved(
                    **envelope(name, i),
                    payload={
                        "job_id": worst_id(i),
                        "attempt": 1,
                        "state": "RUNNING" if running_ else "FAILED",
                        "running": running_,
                        "failure": not running_,
                        "cause": uuid.uuid4(),
                    },
                ),
            )
            if running_:  # keep one running job per iteration: `jobs` fills up too
                state = node.apply(
                    state,
                    NodeJobObserved(
                        **envelope(name, i),
                        payload={
                            "job_id": worst_id(10**6 + i),
                            "attempt": 1,
                            "state": "RUNNING",
                            "running": True,
                            "failure": False,
                            "cause": uuid.uuid4(),
                        },
                    ),
                )
        # A quarantine decided and its drain failing, over and over, with the longest words.
        trigger = uuid.uuid4()
        story = {"trigger_id": trigger, "trigger_type": "QuarantineNodes"}
        decided = NodeDecided(**envelope(name, i), payload={**story, "reason": "\x00" * 10**5})
        failed = NodeActionReported(
            **envelope(name, i),
            payload={
                **story,
                "action": "quarantine_nodes",
                "succeeded": False,
                "refused": True,
                "error": "\x00" * 10**5,
                "cause": uuid.uuid4(),
            },
        )
        state = node.apply(node.apply(state, decided), failed)
    assert state is not None
    assert size(state) <= STATE_BYTES_MAX, size(state)


def test_a_node_set_of_a_huge_job_stays_bounded() -> None:
    key = node_set_key(NODES)
    assert len(key) <= ID_CHARS_MAX
    state = None
    for i in range(1000):
        failed = NodeSetFailed(
            **envelope(key, i),
            payload={"nodes": NODES, "job_id": worst_id(i), "attempt": 1, "cause": uuid.uuid4()},
        )
        state = node_set.apply(state, failed)
    assert state is not None
    assert size(state) <= STATE_BYTES_MAX, size(state)


def test_one_exit_fans_out_to_a_bounded_number_of_nodes() -> None:
    many = tuple(f"n{i}" for i in range(limits.MAX_NODES))
    derived = forwards(ended("j", nodes=many))
    assert len(derived) == NODES_FORWARDED_MAX + 1  # the nodes, and their node set
    node_set_failed = derived[-1]
    assert isinstance(node_set_failed, NodeSetFailed)
    assert len(node_set_failed.subject) <= ID_CHARS_MAX
    assert len(node_set_failed.__pydantic_serializer__.to_json(node_set_failed)) < 900_000
