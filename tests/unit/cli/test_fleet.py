"""Reading the status topic back: the last record of each subject, selections people type."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from centrality.fleet import (
    Fleet,
    checked_states,
    did_you_mean,
    matcher,
    out_of_service_states,
    selected,
    unmatched,
)
from schemas.codec import encode
from schemas.events import JobStatusChanged, NodeStatusChanged
from streams.testing import envelope


def node(
    name: str, state: str, cluster: str = "a", at_s: float = 0.0, **said: Any
) -> NodeStatusChanged:
    return NodeStatusChanged(
        **{**envelope(name, at_s), "cluster": cluster}, payload={"state": state, **said}
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
        [("in_service", "a"), ("quarantined", "a"), ("quarantined", "b"), ("down", "a")]
    )]  # fmt: skip
    names = lambda found: [s.subject for s in found]  # noqa: E731
    assert names(selected(statuses, names=matcher("gpu-[01-02]"))) == ["gpu-01", "gpu-02"]
    assert names(selected(statuses, names=matcher("gpu-0*"), cluster="a")) == [
        "gpu-00", "gpu-01", "gpu-03",
    ]  # fmt: skip
    wanted = checked_states("node", ["QUARANTINED", "down"])
    assert names(selected(statuses, states=wanted, cluster="a")) == ["gpu-01", "gpu-03"]
    with pytest.raises(ValueError, match="neither a hostlist nor a glob"):
        matcher("gpu-[01-")


def test_a_state_no_status_has_is_an_error_naming_the_valid_ones() -> None:
    """`--state quarantine` (a typo) printed "0 nodes"; Slurm's COMPLETED too."""
    with pytest.raises(ValueError, match=r"'quarantine' \(did you mean quarantined\?\)") as typo:
        checked_states("node", "quarantine")
    assert "in_service, draining, suspect, held, quarantined" in str(typo.value)
    with pytest.raises(ValueError, match="no node state is called 'drained'"):
        checked_states("node", ["drained"])  # by hand in the scheduler: quarantined, by scheduler
    with pytest.raises(ValueError, match="SUCCEEDED, FAILED"):
        checked_states("job", "COMPLETED")
    assert checked_states("job", ["running", " Failed "]) == {"RUNNING", "FAILED"}


def test_out_of_service_is_one_selection_and_who_took_a_node_out_a_filter() -> None:
    statuses = [
        node("n1", "in_service"),
        node("n2", "quarantined", by="operator/alice", why="flaky NVLink"),
        node("n3", "quarantined", by="fatal_xid", why="Xid 79 on GPU 3"),
        node("n4", "down", by="scheduler", why="not responding"),
        node("n5", "suspect", by="fatal_xid", problem="circuit breaker: 3 of 20"),
        node("n6", "benchmarking", by="fatal_xid"),
        node("n7", "unreachable"),
    ]
    names = lambda found: [s.subject for s in found]  # noqa: E731
    assert names(selected(statuses, states=out_of_service_states())) == [
        "n2", "n3", "n4", "n6", "n7",
    ]  # fmt: skip
    assert names(selected(statuses, by="operator/*")) == ["n2"]
    assert names(selected(statuses, by="fatal_xid", why="xid 79")) == ["n3"]
    assert names(selected(statuses, why="BREAKER")) == ["n5"]  # its problem counts too


def test_names_and_job_ids_sort_as_people_count() -> None:
    jobs = [JobStatusChanged(**envelope(f"slurm/a/{i}"), payload={}) for i in (10, 2, 1, 11)]
    nodes = [node(n, "in_service") for n in ("gpu-10", "gpu-9", "gpu-100", "gpu-1")]
    assert [s.subject for s in selected(jobs)] == [
        "slurm/a/1", "slurm/a/2", "slurm/a/10", "slurm/a/11",
    ]  # fmt: skip
    assert [s.subject for s in selected(nodes)] == ["gpu-1", "gpu-9", "gpu-10", "gpu-100"]


def test_names_that_match_nothing_are_told_with_what_is_close() -> None:
    known = ["gpu-node-041", "gpu-node-042", "gpu-node-043"]
    assert unmatched("node-042", matcher("node-042"), known) == ["node-042"]
    assert did_you_mean("node-042", known).startswith(" (did you mean gpu-node-042 or ")
    assert did_you_mean("node-042", ["gpu-node-042", "cpu-7"]) == " (did you mean gpu-node-042?)"
    assert unmatched("gpu-node-04[2-5]", matcher("gpu-node-04[2-5]"), known) == [
        "gpu-node-044", "gpu-node-045",
    ]  # fmt: skip
    assert unmatched("gpu-*", matcher("gpu-*"), known) == []
    assert unmatched("cpu-*", matcher("cpu-*"), known) == ["cpu-*"]
