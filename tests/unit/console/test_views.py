"""The fleet and jobs as the console lists them: the CLI's selection, and the page's own."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from centrality.bench.console_fleet import fleet
from centrality.console.views import (
    JOB_COLUMNS,
    NODE_COLUMNS,
    Rows,
    Selection,
    choose,
    counts,
    job_row,
    node_facets,
    node_row,
)
from schemas.events import JobStatusChanged, NodeStatusChanged

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
EVENTS = fleet(400, NOW)
NODES = [e for e in EVENTS if isinstance(e, NodeStatusChanged)]
JOBS = [e for e in EVENTS if isinstance(e, JobStatusChanged)]


def names(want: Selection) -> list[str]:
    return [r[0] for r in choose(NODES, Rows(node_row), NODE_COLUMNS, want)]


def test_the_cli_selection_cluster_states_and_a_hostlist() -> None:
    assert len(names(Selection())) == 400
    held = names(Selection(states=("held",)))
    assert held == ["gpu-00002", "gpu-00102", "gpu-00202", "gpu-00302"]
    assert names(Selection(names="gpu-[00100-00103]", cluster="c1")) == ["gpu-00101", "gpu-00103"]
    assert sorted(names(Selection(names="gpu-0039*"))) == [f"gpu-0039{i}" for i in range(10)]


def test_the_page_choices_group_rule_reason_search() -> None:
    a100 = names(Selection(group="gpu_model=NVIDIA A100-SXM4-80GB"))
    assert len(a100) == 200 and all(int(n[-1]) % 2 for n in a100)
    assert len(names(Selection(group="partition=p1"))) == 100
    by_hand = names(Selection(rule="operator/alice"))
    assert by_hand == ["gpu-00003", "gpu-00103", "gpu-00203", "gpu-00303"]
    assert set(by_hand) < set(names(Selection(states=("quarantined",))))
    assert len(names(Selection(reason="FALLEN OFF"))) == 4
    assert names(Selection(search="inc-c1-5", states=("unreachable",))) == [
        "gpu-00005",
        "gpu-00105",
        "gpu-00205",
        "gpu-00305",
    ]
    with pytest.raises(ValueError, match="not a node group"):
        names(Selection(group="rack=r1"))
    with pytest.raises(ValueError, match="neither a hostlist nor a glob"):
        names(Selection(names="gpu-[01"))


def test_sorted_by_any_column_either_way_empty_values_last() -> None:
    rows = choose(NODES, Rows(node_row), NODE_COLUMNS, Selection(sort="-since"))
    since = [r[3] for r in rows]
    assert since == sorted(since, reverse=True)
    by_why = choose(NODES, Rows(node_row), NODE_COLUMNS, Selection(sort="why"))
    whys = [r[4] for r in by_why]
    assert whys[:4] == ["5 failures on one node set"] * 4 and whys[-1] is None


def test_a_row_is_made_again_only_for_a_new_record() -> None:
    made: list[str] = []

    def counted(status: NodeStatusChanged) -> tuple[str, ...]:
        made.append(status.subject)
        return node_row(status)

    rows = Rows(counted)
    rows.of(NODES[0])
    rows.of(NODES[0])
    rows.of(NODES[0].model_copy())
    assert made == ["gpu-00000", "gpu-00000"]


def test_counts_per_state_and_cluster_and_the_choices() -> None:
    found = counts(NODES)
    assert found["states"]["in_service"] == 376 and found["states"]["held"] == 4
    assert found["clusters"]["c0"]["held"] == 4 and "held" not in found["clusters"]["c1"]
    facets = node_facets(NODES)
    assert "partition=p3" in facets["groups"] and "operator/alice" in facets["rules"]


def test_a_job_row_as_the_jobs_listing_shows_it() -> None:
    rows = choose(JOBS, Rows(job_row), JOB_COLUMNS, Selection(search="slurm/c0/1"))
    [first, *_] = rows
    row = dict(zip(JOB_COLUMNS, first, strict=True))
    assert row["job"] == "slurm/c0/1" and row["nodes_count"] == 8 and row["restarts_left"] == 3
