"""What people read in `nodes`, `jobs`, `node`, `job` and `history`: whole in a pipe, one
vocabulary, times with their zone, lists as lists, one row per action, counts per state."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from centrality import actions_view, fleet_detail, fleet_tables
from centrality.cli import app
from centrality.client import Fleet
from centrality.commands import command
from centrality.history_cli import print_events, summary
from centrality.output import console, said, when
from schemas.events import (
    ActionFailed,
    ActionHeld,
    ActionStarted,
    ActionSucceeded,
    GpuSampled,
    JobStatusChanged,
    NodeStatusChanged,
    QuarantineNodes,
)
from streams.testing import T0, envelope

runner = CliRunner()
LONG_WHY = "fatal_xid saw Xid 79 (GPU has fallen off the bus) on GPU 3 " + "and more " * 30


def node(name: str, state: str, at_s: float = 0.0, **said_: Any) -> NodeStatusChanged:
    return NodeStatusChanged(**envelope(name, at_s), payload={"state": state, **said_})


def fleet() -> list[NodeStatusChanged]:
    return [
        node("gpu-node-10", "quarantined", 5, since=T0, by="fatal_xid", why=LONG_WHY),
        node("gpu-node-2", "in_service", 6, since=T0 + timedelta(seconds=60)),
        node("gpu-node-1", "quarantined", 7, since=T0 + timedelta(seconds=30), by="operator/alice",
             why="NVLink on gpu-[01-02] [bold]flaky[/bold]"),
    ]  # fmt: skip


def printed(renderable: Any) -> str:
    out = console()  # pytest's capture is no terminal: as a pipe sees it
    assert not out.is_terminal
    with out.capture() as captured:
        out.print(renderable)
    return captured.get()


def test_a_listing_in_a_pipe_is_whole_with_counts_per_state_and_markup_left_alone() -> None:
    text = printed(fleet_tables.table("node", fleet(), T0 + timedelta(hours=1)))
    assert "3 nodes: 1 in_service, 2 quarantined" in text
    assert " ".join(LONG_WHY.split()) in " ".join(text.split()) and "…" not in text
    assert "NVLink on gpu-[01-02] [bold]flaky[/bold]" in text
    line = next(ln for ln in text.splitlines() if "gpu-node-1 " in ln)
    assert "operator/alice" in line and "59m ago" in line  # `by` is a column, not a state


def test_tsv_rows_say_times_in_iso_with_their_zone_and_sort_by_any_column() -> None:
    clock = fleet_tables.Clock(T0, plain=True)
    [row] = fleet_tables.rows("node", [fleet()[1]], clock)
    assert row[:5] == ["gpu-node-2", "test", "in_service", "", "2026-01-01T00:01:00Z"]
    by_since = fleet_tables.sorter("node", "-since")(fleet())
    assert [s.subject for s in by_since] == ["gpu-node-2", "gpu-node-1", "gpu-node-10"]
    by_name = fleet_tables.sorter("node", "node")(fleet())
    assert [s.subject for s in by_name] == ["gpu-node-1", "gpu-node-2", "gpu-node-10"]
    with pytest.raises(ValueError, match="no column 'age' to sort by; the columns: node, cluster"):
        fleet_tables.sorter("node", "age")


def test_a_job_says_its_restarts_as_used_and_left_and_since_when_it_waits() -> None:
    job = JobStatusChanged(
        **envelope("slurm/a/24"),
        payload={
            "state": "FAILED",
            "attempt": 1,
            "restarts_used": 1,
            "restarts_left": 2,
            "pending": "next attempt",
            "pending_since": T0,
        },
    )
    clock = fleet_tables.Clock(T0, plain=True)
    [row] = fleet_tables.rows("job", [job], clock)
    cells = dict(zip(fleet_tables.JOB_COLUMNS, row, strict=True))
    assert cells["restarts"] == "1 used, 2 left"
    assert cells["pending"] == "next attempt since 2026-01-01T00:00:00Z"
    later = fleet_tables.Clock(T0 + timedelta(hours=2), plain=False)
    assert fleet_tables.rows("job", [job], later)[0][6] == "next attempt since 2h ago"


def test_one_node_in_full_says_lists_as_lists_times_with_zones_and_no_empty_fields() -> None:
    """`ladder ()`, `('slurm/a/24',)` and naive times were printed as Python wrote them."""
    status = node(
        "gpu-node-1",
        "quarantined",
        since=T0,
        by="operator/alice",
        why="NVLink",
        jobs=("slurm/a/24", "slurm/a/25"),
        jobs_running=2,
        last_benchmark_at=T0,
    )
    shown = dict(fleet_detail.fields("node", status))
    assert shown["why"] == "NVLink" and shown["by"] == "operator/alice"  # as the listing says
    assert shown["since"] == "2026-01-01T00:00:00Z"
    assert shown["jobs"] == "slurm/a/24, slurm/a/25"
    assert shown["last_benchmark_at"] == "2026-01-01T00:00:00Z"
    assert "ladder" not in shown and "rungs_left" not in shown and "labels" not in shown
    assert not any("(" in v and "'" in v for v in shown.values())


def decision_and_results() -> list[Any]:
    drain = command(
        QuarantineNodes, operator="alice", cluster="test", subject="n1", reason="NVLink",
        nodes=("n1",),
    )  # fmt: skip
    head = {"trigger_id": drain.event_id, "trigger_type": "QuarantineNodes", "nodes": ("n1",)}
    started = ActionStarted(**envelope("n1", 1), payload={**head, "action": "quarantine_nodes"})
    detail = {"drain": {"scheduler": "slurm", "drained": ["n1"], "reason": "x" * 300}}
    done = ActionSucceeded(
        **envelope("n1", 2), payload={**head, "action": "quarantine_nodes", "detail": detail}
    )
    return [drain, started, done]


def test_each_action_is_one_row_with_its_result_said_whole() -> None:
    drain, started, done = decision_and_results()
    [action] = actions_view.actions([done, started, drain])
    row = dict(zip(actions_view.COLUMNS, actions_view.row(action), strict=True))
    assert row["action"] == "QuarantineNodes" and row["by"] == "operator/alice"
    assert row["result"] == (
        f"succeeded: drain.scheduler=slurm, drain.drained=n1, drain.reason={'x' * 300}"
    )
    assert row["decided at"].endswith("Z") and row["done at"] == "2026-01-01T00:00:02Z"
    held = ActionFailed(
        **envelope("n1", 3),
        payload={
            **done.payload.model_dump(exclude={"detail"}),
            "error": "held by silence s-1 until …",
            "permanent": True,
            "refused": True,
            "held_by": "s-1",
        },
    )
    assert actions_view.result_said(held) == "held by silence s-1 until …"
    silenced = ActionHeld(
        **envelope("n1", 3),
        payload={
            **done.payload.model_dump(exclude={"detail"}),
            "held_by": "s-2",
            "until": T0 + timedelta(hours=2),
            "why": "alice: drivers",
        },
    )
    assert actions_view.result_said(silenced) == (
        "held by silence s-2 until 2026-01-01T02:00:00Z (alice: drivers)"
    )


def test_a_timeline_tells_each_action_once_whole_with_zoned_times() -> None:
    """Two rows per action, JSON cut mid-object and times without a zone, no more."""
    events = decision_and_results()
    sample = GpuSampled(**envelope("n1", 4), payload={"gpu": 0, "utilization_pct": 50.0})
    assert summary(sample) == "gpu=0, utilization_pct=50.0"
    out = Console(width=400, record=True)
    print_events("node n1", [*events, sample], out)
    text = out.export_text()
    assert "ActionStarted" not in text and "ActionSucceeded" in text
    assert "2026-01-01T00:00:02.000Z" in text and f"drain.reason={'x' * 300}" in text
    assert "{" not in text


def test_the_command_line_refuses_states_and_reasons_nobody_can_read_before_reading_kafka() -> None:
    typo = runner.invoke(app, ["nodes", "--state", "quarantine"])
    assert typo.exit_code == 2 and "did you mean quarantined?" in typo.output
    slurm = runner.invoke(app, ["jobs", "--state", "COMPLETED"])
    assert slurm.exit_code == 2 and "SUCCEEDED" in slurm.output
    for argv in (
        ["quarantine", "n1", "--reason", ""],
        ["release", "n1", "--reason", "   "],
        ["requeue", "slurm/a/1", "--reason", ""],
        ["silence", "add", "--cluster", "a", "--for", "1h", "--reason", " "],
    ):
        blank = runner.invoke(app, argv)
        assert blank.exit_code == 2 and "reason people can read" in blank.output, argv


def test_the_client_refuses_unknown_states_and_blank_reasons_at_once() -> None:
    """`job.wait("COMPLETED")` (Slurm's word) waited out its whole timeout."""
    client = Fleet()
    started = time.monotonic()
    with pytest.raises(ValueError, match=r"no job state is called 'COMPLETED'.*SUCCEEDED"):
        client.job("slurm/a/1").wait("COMPLETED", timeout_s=600)
    with pytest.raises(ValueError, match="did you mean quarantined"):
        client.nodes(state="quarantine")
    with pytest.raises(ValueError, match="reason people can read"):
        client.quarantine(["n1"], "  ")
    assert time.monotonic() - started < 5


def test_values_are_said_as_people_write_them() -> None:
    assert said(("a", "b")) == "a, b" and said(()) == "-" and said(None) == "-"
    assert said({"x": {"y": [1, 2]}, "z": True}) == "x.y=1, 2, z=yes"
    assert when(T0) == "2026-01-01T00:00:00Z" and when(T0.replace(tzinfo=None)).endswith("Z")
