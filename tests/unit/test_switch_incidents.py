"""The failure domain an incident names comes from the collectors' topology: the leaf switches
read from what real Slurm printed (`scontrol show topology`), and the simulator's, told to the
brain that decides live (`streams.testing.Story`)."""

from __future__ import annotations

from pathlib import Path

from collectors.simulate.config import SimConfig
from collectors.simulate.model import ClusterModel
from collectors.watchers.slurm.topology import leaf_switches
from schemas.events import NodeFactsObserved
from streams.testing import T0, Story, facts, heartbeat, xid

TOPOLOGY = Path(__file__).resolve().parents[1] / "fixtures/realworld/slurm/24.11"


def slurm_story() -> Story:
    """The tests' Slurm cluster as 24.11 printed its topology: s1 node[1-2], s2 node3."""
    switches = leaf_switches((TOPOLOGY / "scontrol-show-topology.txt").read_text())
    story = Story()
    story.tell(*(facts(node, 0, switch=switch) for node, switch in sorted(switches.items())))
    story.tell(*(heartbeat(node, 0) for node in sorted(switches)))
    return story


def test_fatal_xids_under_one_slurm_leaf_switch_are_an_incident_naming_it() -> None:
    story = slurm_story()
    story.tell(xid("node1", 79, at_s=1), xid("node2", 79, at_s=2))
    [incident] = story.incidents.values()
    assert (incident.domain, incident.nodes) == ("switch s1", "node[1-2]")
    assert incident.title.startswith("2 nodes under switch s1 hit ")


def test_faults_across_two_switches_name_no_switch() -> None:
    story = slurm_story()
    story.tell(xid("node2", 79, at_s=1), xid("node3", 79, at_s=2))
    [incident] = story.incidents.values()
    assert incident.domain == "cluster test"


def test_a_simulated_leaf_switch_that_goes_dark_is_one_incident_naming_it() -> None:
    """64 simulated nodes, 32 a switch: from 30 s on nothing of s1's nodes reaches the pipeline
    (their switch died), s0's go on."""
    model = ClusterModel(SimConfig(nodes=64, gpus=1, jobs=0, nodes_per_switch=32), T0)
    switches: dict[str, str | None] = {}
    story = Story()
    for tick in range(0, 300, 10):
        events = model.tick(float(tick))
        switches |= {
            e.subject: e.payload.switch for e in events if isinstance(e, NodeFactsObserved)
        }
        dark = {n for n, s in switches.items() if s == "s1"} if tick >= 30 else set()
        story.tell(*(e for e in events if e.subject not in dark))
    story.wait(300)
    assert {s: sum(1 for v in switches.values() if v == s) for s in ("s0", "s1")} == {
        "s0": 32,
        "s1": 32,
    }
    [incident] = story.incidents.values()
    assert (incident.kind, incident.domain) == ("heartbeat_lost", "switch s1")
    assert (incident.nodes, incident.nodes_count) == ("node-[0032-0063]", 32)
