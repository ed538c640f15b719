"""A kind owns what its fold registers (`streams.state.entities`): one source of truth for
routing."""

from __future__ import annotations

from collections.abc import Callable
from functools import singledispatch
from typing import Any, Literal

import pytest

from schemas.envelope import Event, Payload
from schemas.events import GpuSampled, JobExited, QuarantineNodes, RestartJob, Trigger
from streams.state import node, node_set, training_job
from streams.state.entities import JOBS, KINDS, NODE_SETS, NODES, Kind, kind_of_type, routes
from streams.state.internal import JobTick, NodeSetFailed, NodeTick


class Noted(Event):
    type: Literal["Noted"] = "Noted"
    payload: Payload


class Ticked(Event):
    type: Literal["Ticked"] = "Ticked"
    payload: Payload


def a_fold() -> Callable[..., Any]:
    @singledispatch
    def fold(event: Event, state: Any) -> Any:
        return state

    return fold


def a_kind(table: str, fold: Callable[..., Any], tick: type[Event] | None = None) -> Kind:
    return Kind(table, Payload, lambda state, event: fold(event, state), fold, tick=tick)


def test_a_type_registered_on_a_fold_is_owned_by_its_kind_and_routed_there() -> None:
    fold = a_fold()
    fold.register(Noted, lambda event, state: state)  # type: ignore[attr-defined]
    fold.register(RestartJob, lambda event, state: state)  # type: ignore[attr-defined]
    things = a_kind("things", fold, tick=Ticked)
    # The decision it folds back is its own to fold, never routed to it; its tick is.
    assert things.owns == (Noted, Ticked)
    assert routes([things]) == {Noted: things, Ticked: things}


def test_a_type_two_kinds_fold_is_refused() -> None:
    first, second = a_fold(), a_fold()
    for fold in (first, second):
        fold.register(Noted, lambda event, state: state)  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="Noted is folded by both ones and twos"):
        routes([a_kind("ones", first), a_kind("twos", second)])


def test_a_decision_two_kinds_fold_back_is_no_conflict() -> None:
    first, second = a_fold(), a_fold()
    for fold in (first, second):
        fold.register(QuarantineNodes, lambda event, state: state)  # type: ignore[attr-defined]
    assert routes([a_kind("ones", first), a_kind("twos", second)]) == {}


def test_the_brains_kinds_own_what_their_folds_register() -> None:
    for kind, module in ((JOBS, training_job), (NODES, node), (NODE_SETS, node_set)):
        assert kind.fold is module.fold
        for cls in module.fold.registry:
            if cls is not object:
                assert kind_of_type(cls) is (None if issubclass(cls, Trigger) else kind), cls
    assert (JOBS.tick, NODES.tick, NODE_SETS.tick) == (JobTick, NodeTick, None)
    assert kind_of_type(JobTick) is JOBS and kind_of_type(NodeTick) is NODES
    assert kind_of_type(JobExited) is JOBS and kind_of_type(GpuSampled) is NODES
    assert kind_of_type(NodeSetFailed) is NODE_SETS
    assert kind_of_type(RestartJob) is None and kind_of_type(QuarantineNodes) is None
    folded = {c for k in KINDS for c in k.fold.registry if c is not object}
    assert set(routes(KINDS)) == {c for c in folded if not issubclass(c, Trigger)} | {
        JobTick,
        NodeTick,
    }
