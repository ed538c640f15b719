"""The leaf switch of each node, read from what real Slurm 22.05, 23.11 and 24.11 printed for
`scontrol show topology` (tests/fixtures/realworld/slurm/PROVENANCE.md, "Topology"): the tests'
cluster with topology/tree (s1: node[1-2], s2: node3, `top` above both), and without a
topology plugin."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.watchers.slurm.topology import leaf_switches

SLURM = Path(__file__).resolve().parents[2] / "fixtures" / "realworld" / "slurm"
VERSIONS = ("22.05", "23.11", "24.11")


def printed(version: str, name: str) -> str:
    return (SLURM / version / f"{name}.txt").read_text()


@pytest.mark.parametrize("version", VERSIONS)
def test_each_node_hangs_off_its_leaf_not_the_switch_above(version: str) -> None:
    # `top` (Level=1) lists every node beneath it too: only Level=0 switches are leaves.
    text = printed(version, "scontrol-show-topology")
    assert "SwitchName=top" in text and "Nodes=node[1-3]" in text
    assert leaf_switches(text) == {"node1": "s1", "node2": "s1", "node3": "s2"}


@pytest.mark.parametrize("version", VERSIONS)
def test_without_a_topology_plugin_no_node_has_a_switch(version: str) -> None:
    assert leaf_switches(printed(version, "scontrol-show-topology-none")) == {}
    assert printed(version, "scontrol-show-topology-none.stderr").startswith("# rc 0\n")


def test_only_slurm_22_05_says_there_is_no_topology() -> None:
    said = {v: printed(v, "scontrol-show-topology-none.stderr") for v in VERSIONS}
    assert said == {
        "22.05": "# rc 0\nscontrol: error: No topology information available\n",
        "23.11": "# rc 0\n",
        "24.11": "# rc 0\n",
    }


def test_a_node_under_two_leaves_keeps_the_first() -> None:
    text = (
        "SwitchName=a Level=0 LinkSpeed=1 Nodes=gpu-[01-02]\n"
        "SwitchName=b Level=0 LinkSpeed=1 Nodes=gpu-[02-03]\n"
        "SwitchName=c Level=0 LinkSpeed=1 Nodes=(null)\n"
    )
    assert leaf_switches(text) == {"gpu-01": "a", "gpu-02": "a", "gpu-03": "b"}
