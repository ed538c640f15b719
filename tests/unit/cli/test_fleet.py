"""Reading the status topic back: the last record of each subject, selections people type."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from centrality.fleet import Fleet, matcher, selected
from schemas.codec import encode
from schemas.events import JobStatusChanged, NodeStatusChanged
from streams.testing import envelope


def node(name: str, state: str, cluster: str = "a", at_s: float = 0.0) -> NodeStatusChanged:
    return NodeStatusChanged(
        **{**envelope(name, at_s), "cluster": cluster}, payload={"state": state}
    )


def records(*events: Any) -> list[SimpleNamespace]:
    return [SimpleNamespace(key=e.key, value=encode(e)) for e in events]


def test_the_last_status_of_each_subject_counts_and_garbage_is_counted_not_fatal() -> None:
    fleet = Fleet()
    fleet.take([SimpleNamespace(key=b"n3", value=b"{"), *records(node("n1", "draining"))])
    fleet.take(records(node("n2", "in_service")))
    fleet.take([*records(node("n1", "quarantined", at_s=1)), SimpleNamespace(key=b"x", value=b"{")])
    job = JobStatusChanged(**envelope("slurm/a/1"), payload={"state": "RUNNING", "attempt": 2})
    fleet.take(records(job, node("n3", "in_service")))  # replaces n3's garbage: never decoded
    assert not fleet.nodes and not fleet.changed  # decoded once the read is done
    fleet.settle()
    assert {k: s.payload.state for k, s in fleet.nodes.items()} == {
        "n1": "quarantined",
        "n2": "in_service",
        "n3": "in_service",
    }
    assert fleet.jobs["slurm/a/1"].payload.attempt == 2 and fleet.unreadable == 1
    assert repr(fleet) == "Fleet(3 nodes, 1 jobs)"


def test_what_people_select_by_hostlist_glob_state_and_cluster() -> None:
    statuses = [node(f"gpu-{i:02d}", s, c) for i, (s, c) in enumerate(
        [("in_service", "a"), ("held", "a"), ("held", "b"), ("down", "a")]
    )]  # fmt: skip
    names = lambda found: [s.subject for s in found]  # noqa: E731
    assert names(selected(statuses, names=matcher("gpu-[01-02]"))) == ["gpu-01", "gpu-02"]
    assert names(selected(statuses, names=matcher("gpu-0*"), cluster="a")) == [
        "gpu-00", "gpu-01", "gpu-03",
    ]  # fmt: skip
    assert names(selected(statuses, states=["HELD", "down"], cluster="a")) == ["gpu-01", "gpu-03"]
    with pytest.raises(ValueError, match="neither a hostlist nor a glob"):
        matcher("gpu-[01-")
