"""A message's work for one entity, planned without Kafka (`streams.brain.plan`): the fold and
its decisions, the status people read, every output encoded, and the bounds checked before
anything would be sent."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from schemas.codec import encode
from schemas.envelope import Event
from streams.brain.plan import Plan, Refused, plan, plan_records
from streams.brain.views import Views
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.state.entities import JOBS, NODES
from streams.testing import checkpoint, ended, heartbeat, running, sample, xid

ENGINE = RuleEngine.load(StreamsSettings().rule_modules, {})
VIEWS = Views(ENGINE)


def test_a_fatal_xid_plans_its_quarantine_its_status_and_its_state() -> None:
    planned = plan(NODES, None, [xid("n1", 79)], ENGINE, VIEWS, outputs_max=64)
    assert [t.type for t, _ in planned.triggers] == ["QuarantineNodes"]
    assert [encoded for _, encoded in planned.triggers] == [encode(t) for t, _ in planned.triggers]
    assert [e.type for e, _ in planned.statuses] == ["NodeStatusChanged"]
    assert planned.changed
    assert orjson.loads(planned.value)["node_id"] == "n1"
    assert [encoded for _, encoded in planned.forwards] == [
        encode(f) for f in planned.step.forwards
    ]


def test_what_changes_nothing_plans_no_write_and_no_status() -> None:
    first = plan(NODES, None, [heartbeat("n1", 0.0)], ENGINE, VIEWS, outputs_max=64)
    again = plan(NODES, first.step.state, [heartbeat("n1", 0.0)], ENGINE, VIEWS, outputs_max=64)
    assert not again.changed
    assert again.value == b"" and again.statuses == [] and again.triggers == []


def test_too_many_outputs_are_refused_before_anything_is_sent() -> None:
    with pytest.raises(Refused) as refused:
        plan(NODES, None, [xid("n1", 79)], ENGINE, VIEWS, outputs_max=1)
    assert refused.value.reason == "amplification"


def _outputs(planned: Plan) -> tuple[list[Any], list[Any], list[Any]]:
    """Each output as sent, but when it was made (`observed_at`, the wall clock's)."""
    return tuple(  # type: ignore[return-value]
        [{**orjson.loads(encoded), "observed_at": None} for _, encoded in outputs]
        for outputs in (planned.forwards, planned.triggers, planned.statuses)
    )


JOB_RECORDS: list[list[Event]] = [
    [running("slurm/p/1")],
    [checkpoint(7, "slurm/p/1", at_s=3.0)],
    [ended("slurm/p/1", at_s=5.0)],
]


@pytest.mark.parametrize(
    ("kind", "records"),
    [
        (NODES, [[heartbeat("n1", 0.0)], [sample("n1", at_s=1.0)], [xid("n1", 79, at_s=2.0)]]),
        (NODES, [[heartbeat("n1", 0.0), xid("n1", 48, at_s=1.0)], [heartbeat("n1", 5.0)]]),
        (JOBS, JOB_RECORDS),
    ],
)
def test_records_planned_together_are_each_record_planned_in_turn(
    kind: Any, records: list[list[Any]]
) -> None:
    """What the worker folds together behind a backlog (`streams.faust.batching`) sends what
    the records one by one would have sent, each status included, and writes their last state."""
    state, alone = None, []
    for events in records:
        planned = plan(kind, state, events, ENGINE, VIEWS, outputs_max=64)
        alone.append(planned)
        state = planned.step.state
    together = plan_records(kind, None, records, ENGINE, VIEWS, outputs_max=64)
    assert _outputs(together) == tuple(
        [o for planned in alone for o in _outputs(planned)[part]] for part in range(3)
    )
    assert together.step.triggers  # the cases decide something: the comparison is not empty
    assert state is not None
    assert together.value == state.__pydantic_serializer__.to_json(state)


def _count(planned: Plan) -> int:
    return len(planned.forwards) + len(planned.triggers) + len(planned.statuses)


def test_records_planned_together_are_bounded_record_by_record() -> None:
    """A record's outputs are bounded alone: together they may be more than one record may
    yield, and none is refused for that; a record over the bound is."""
    state, most = None, 0
    for events in JOB_RECORDS:
        planned = plan(JOBS, state, events, ENGINE, VIEWS, outputs_max=64)
        state, most = planned.step.state, max(most, _count(planned))
    together = plan_records(JOBS, None, JOB_RECORDS, ENGINE, VIEWS, outputs_max=most)
    assert _count(together) > most
    with pytest.raises(Refused) as refused:
        plan_records(JOBS, None, JOB_RECORDS, ENGINE, VIEWS, outputs_max=most - 1)
    assert refused.value.reason == "amplification"
