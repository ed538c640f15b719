"""A job's NCCL error naming the failing peer reaches that node, as evidence against it."""

from __future__ import annotations

from streams.state.peers import resolve
from streams.testing import Story, ended, log_signal

EC2 = ("ip-10-200-84-247.ec2.internal", "ip-10-200-84-248.ec2.internal")
# NVIDIA/nccl#795 (tests/fixtures/realworld/logs): the rank on ...-248 lost its peer ...-247.
LINE = (
    "ip-10-200-84-248:183006:183220 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from "
    "10.200.84.247<58355> failed : Broken pipe"
)


def test_a_peer_resolves_to_the_one_node_it_names() -> None:
    nodes = ("gpu-01.example.org", "gpu-02.example.org", "10.0.0.9", *EC2)
    assert resolve("gpu-02", nodes) == "gpu-02.example.org"  # short name of a full one
    assert resolve("gpu-02.example.org", nodes) == "gpu-02.example.org"
    assert resolve("gpu-01.other.net", nodes) == "gpu-01.example.org"  # same first label
    assert resolve("10.200.84.247", nodes) == EC2[0]  # the name EC2 derives from the address
    assert resolve("10.0.0.9", nodes) == "10.0.0.9"
    assert resolve("10.0.0.10", nodes) is None  # no address map in the events: named nothing
    assert resolve("gpu-03", nodes) is None
    assert resolve("gpu-01", ("gpu-01.a.org", "gpu-01.b.org")) is None  # ambiguous: nothing


def test_the_named_node_hears_it_and_no_other() -> None:
    story = Story()
    story.tell(ended(attempt=1, at_s=0, nodes=EC2))
    signal = log_signal(signal="NCCL_ERROR", at_s=60, line=LINE, node=EC2[1], peer="10.200.84.247")
    story.tell(signal, signal)  # redelivered: told once
    (named,) = story.nodes[EC2[0]].named_as_peer
    assert (named.job_id, named.by) == ("slurm/test/42", EC2[1])
    assert story.nodes[EC2[1]].named_as_peer == ()
    # A line naming its own node (or nothing the job ran on) tells no one.
    story.tell(log_signal(signal="NCCL_ERROR", at_s=70, node=EC2[0], peer="10.200.84.247"))
    story.tell(log_signal(signal="NCCL_ERROR", at_s=80, node=EC2[0], peer="10.9.9.9"))
    assert len(story.nodes[EC2[0]].named_as_peer) == 1
