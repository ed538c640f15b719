"""Centrality's maintenance windows as the Slurm watcher reads them (`scontrol show reservation
-o`, 22.05): a node resumed inside one is still Centrality's drained node, not back in service."""

from __future__ import annotations

from pathlib import Path

from collectors.watchers.slurm.nodes import NodeView, windows_of
from schemas.events.nodes import SchedulerNodeState

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "realworld" / "slurm" / "22.05"


def test_only_centralitys_active_windows_count() -> None:
    text = (REAL / "scontrol-show-reservation-o.txt").read_text()
    assert windows_of(text) == {"node2": "centrality-1a2b3c4d", "node3": "centrality-1a2b3c4d"}
    assert windows_of((REAL / "scontrol-show-reservation-none.txt").read_text()) == {}


def test_a_node_resumed_inside_a_window_is_drained_by_centrality() -> None:
    inside = NodeView("node3", ("MIXED",), None, window="centrality-1a2b3c4d")
    assert inside.state is SchedulerNodeState.DRAINED
    assert inside.said == "centrality: maintenance window centrality-1a2b3c4d"
    drained = NodeView("node3", ("IDLE", "DRAIN"), "centrality: Xid 79", window="centrality-x")
    assert drained.state is SchedulerNodeState.DRAINED and drained.said == "centrality: Xid 79"
    outside = NodeView("node1", ("IDLE",), None)
    assert outside.state is SchedulerNodeState.AVAILABLE and outside.said is None
