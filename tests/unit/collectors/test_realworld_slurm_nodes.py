"""Slurm node states with their suffixes and hostlists with duplicates, on what real Slurm and
real clusters printed (tests/fixtures/realworld/slurm/PROVENANCE.md, "Node states and
duplicates"). Expected states written by hand from sinfo(1)'s NODE STATE CODES."""

from pathlib import Path

import hostlist
import pytest

from actions.adapters.slurm_cli import expand_nodes
from collectors.watchers.slurm.nodes import from_scontrol
from collectors.watchers.slurm.states import expand, node_state
from schemas.events.nodes import SchedulerNodeState
from schemas.slurm import slurm_node_words

SLURM = Path(__file__).resolve().parents[2] / "fixtures" / "realworld" / "slurm"
A, DRAINING, DRAINED, DOWN, UNKNOWN = (
    SchedulerNodeState.AVAILABLE,
    SchedulerNodeState.DRAINING,
    SchedulerNodeState.DRAINED,
    SchedulerNodeState.DOWN,
    SchedulerNodeState.UNKNOWN,
)

# Every code sinfo(1) of 22.05.8 documents (node-state-codes.txt), suffixes shown on `idle`
# as sinfo prints them, and what it means for new work.
DOCUMENTED = {
    "*": ("IDLE*", DOWN),  # not responding
    "~": ("IDLE~", A),  # powered off: Slurm powers it up on demand
    "#": ("IDLE#", A),  # being powered up
    "!": ("IDLE!", A),  # pending power down
    "%": ("IDLE%", A),  # being powered down
    "$": ("IDLE$", A),  # in a maintenance reservation
    "@": ("IDLE@", A),  # reboot pending: runs work until it reboots
    "^": ("IDLE^", DOWN),  # reboot issued: gone until it registers again
    "-": ("IDLE-", A),  # planned by the backfill scheduler
    "ALLOCATED": ("ALLOCATED", A),
    "ALLOCATED+": ("ALLOCATED+", A),
    "COMPLETING": ("COMPLETING", A),
    "DOWN": ("DOWN", DOWN),
    "DRAINED": ("DRAINED", DRAINED),
    "DRAINING": ("DRAINING", DRAINING),
    "FAIL": ("FAIL", DRAINED),
    "FAILING": ("FAILING", DRAINING),
    "FUTURE": ("FUTURE", UNKNOWN),
    "IDLE": ("IDLE", A),
    "INVAL": ("INVAL", DOWN),
    "MAINT": ("MAINT", A),
    "REBOOT_ISSUED": ("REBOOT_ISSUED", DOWN),
    "REBOOT_REQUESTED": ("REBOOT_REQUESTED", A),
    "MIXED": ("MIXED", A),
    "PERFCTRS (NPC)": ("NPC", A),
    "PLANNED": ("PLANNED", A),
    "POWER_DOWN": ("POWER_DOWN", A),
    "POWERED_DOWN": ("POWERED_DOWN", A),
    "POWERING_DOWN": ("POWERING_DOWN", A),
    "POWERING_UP": ("POWERING_UP", A),
    "RESERVED": ("RESERVED", A),
    "UNKNOWN": ("UNKNOWN", UNKNOWN),
}


def test_every_documented_node_state_code_is_mapped_on_purpose() -> None:
    lines = (SLURM / "22.05" / "node-state-codes.txt").read_text().splitlines()
    assert sorted(lines) == sorted(DOCUMENTED)


@pytest.mark.parametrize("code", sorted(DOCUMENTED))
def test_documented_node_state_codes(code: str) -> None:
    printed, state = DOCUMENTED[code]
    assert node_state(list(slurm_node_words(printed))) == state


# State= as `scontrol show node` prints it, flags joined by `+`.
@pytest.mark.parametrize(
    ("printed", "state"),
    [
        ("IDLE+DRAIN", DRAINED),
        ("MIXED+DRAIN", DRAINING),
        ("DOWN*", DOWN),
        ("DOWN*+DRAIN", DOWN),
        ("ALLOCATED+COMPLETING", A),
        ("IDLE+CLOUD+POWERED_DOWN", A),
        ("IDLE*+CLOUD", DOWN),
        ("MIXED+DRAIN+REBOOT_REQUESTED", DRAINING),
        ("drained*", DRAINED),  # sinfo %T: a drained node that stopped answering
        ("draining@", DRAINING),
        ("mix-", A),
        ("drng", DRAINING),
        ("drain", DRAINED),
    ],
)
def test_states_with_flags_and_suffixes(printed: str, state: SchedulerNodeState) -> None:
    assert node_state(list(slurm_node_words(printed))) == state


def test_scontrol_one_liners_of_slurm_16_05() -> None:
    views = from_scontrol((SLURM / "nodes" / "scontrol-oneliner-16.05.txt").read_text())
    got = {v.name: (v.state, v.reason) for v in views}
    not_responding = (DOWN, "Not responding")
    assert got == {
        "datamover1": (A, None),
        "datamover2": not_responding,
        "highmem1": not_responding,
        "highmem2": not_responding,
        "highmem4": not_responding,
        "lm1": not_responding,
        "lm2": (DOWN, "NHC:"),
        "lm3": (DOWN, "NHC:"),
        "r1n03": (A, None),
        "r1n04": (A, None),
    }
    assert {v.raw_state for v in views if v.name == "datamover2"} == {"DOWN+NOT_RESPONDING+DRAIN"}
    partitions = {v.name: v.partitions for v in views}
    assert partitions["datamover1"] == ("copy",) and partitions["lm1"] == ("highmem",)
    assert {v.features for v in views} == {()}  # `ActiveFeatures=(null)`


def test_a_powered_down_cloud_node_is_available() -> None:
    text = (SLURM / "nodes" / "scontrol-show-nodes-pcluster-cloud.txt").read_text()
    [view] = from_scontrol(text)
    assert (view.name, view.state) == ("queue1-dy-compute-resource-1-10", A)
    assert view.partitions == ("queue1",)
    assert view.features == ("dynamic", "c5n.4xlarge", "compute-resource-1")


def test_sinfo_state_column_with_suffixes() -> None:
    rows = (SLURM / "nodes" / "sinfo-pcluster-suffixes.txt").read_text().splitlines()[1:]
    got = {}
    for row in rows:
        _, _, _, _, printed, nodelist = row.split()
        for name in expand(nodelist):
            got[name] = node_state(list(slurm_node_words(printed)))
    assert sum(1 for s in got.values() if s == A) == 30
    assert sorted(n for n, s in got.items() if s == DOWN) == sorted(
        ["p4d-dy-p4d-24xlarge-1", "p4d-dy-p4d-24xlarge-2"]
        + [f"gpu-spot-mixed-dy-gpu-spot-mixed-{i}" for i in range(1, 11)]
    )


def duplicates() -> list[tuple[str, str]]:
    lines = (SLURM / "22.05" / "hostnames-duplicates.tsv").read_text().splitlines()
    return [tuple(line.split("\t")) for line in lines]  # type: ignore[misc]


@pytest.mark.parametrize(("expression", "names"), duplicates())
def test_hostlists_with_duplicates_expand_as_slurm_keeps_them(expression: str, names: str) -> None:
    if names.startswith("ERROR"):
        with pytest.raises(hostlist.BadHostlist):
            expand(expression)
        return
    assert ",".join(expand(expression)) == names
    # The adapter acts on a set of nodes: each once, in Slurm's order.
    assert expand_nodes([expression]) == list(dict.fromkeys(names.split(",")))
