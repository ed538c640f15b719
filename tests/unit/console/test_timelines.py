"""A story as the console shows it: a line for each event, and links to what it names."""

from __future__ import annotations

from datetime import UTC, datetime

from centrality.commands import command
from centrality.console.timelines import kind_in, rows
from schemas.events import ActionSucceeded, GpuXidObserved, QuarantineNodes

AT = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def test_each_event_says_what_it_is_and_links_what_it_names() -> None:
    xid = GpuXidObserved(
        source="agent",
        cluster="a",
        subject="gpu-1",
        occurred_at=AT,
        payload={"gpu": 3, "xid": 79},
    )
    order = command(
        QuarantineNodes,
        operator="alice",
        cluster="a",
        subject="gpu-1",
        reason="<script>alert(1)</script>",
        nodes=("gpu-1", "javascript:alert(1)"),
    )
    done = ActionSucceeded(
        source="actions",
        cluster="a",
        subject="gpu-1",
        occurred_at=AT,
        payload={
            "trigger_id": order.event_id,
            "trigger_type": "QuarantineNodes",
            "action": "quarantine_nodes",
            "nodes": ("gpu-1",),
            "jobs": ("slurm/a/7",),
        },
    )
    link = kind_in(["gpu-1", "javascript:alert(1)"], ["slurm/a/7"])
    found = rows([xid, order, done], link)
    assert [r["category"] for r in found] == ["event", "operator", "result"]
    assert (
        found[1]["what"] == "operator/alice: <script>alert(1)</script>"
    )  # text; the page shows it
    assert found[1]["links"] == [
        {"kind": "node", "id": "gpu-1"},
        {"kind": "node", "id": "javascript:alert(1)"},
    ]
    assert found[2]["links"] == [
        {"kind": "node", "id": "gpu-1"},
        {"kind": "job", "id": "slurm/a/7"},
    ]
    assert found[0]["event"]["payload"]["xid"] == 79


def test_only_known_subjects_and_incidents_are_linked() -> None:
    link = kind_in(["n"], ["j"])
    assert [link(s) for s in ("n", "j", "inc-42", "other")] == ["node", "job", "incident", None]
