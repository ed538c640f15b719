"""A message's work for one entity, planned without Kafka (`streams.brain.plan`): the fold and
its decisions, the status people read, every output encoded, and the bounds checked before
anything would be sent."""

from __future__ import annotations

import orjson
import pytest

from schemas.codec import encode
from streams.brain.plan import Refused, plan
from streams.brain.views import Views
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.state.entities import NODES
from streams.testing import heartbeat, xid

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
