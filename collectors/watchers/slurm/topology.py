"""The leaf switch each node hangs off, from Slurm's topology (`scontrol show topology`, one switch
a line). With `topology/tree`, a switch of `Level=0` is a leaf and its `Nodes=` hostlist names the
nodes cabled to it; switches above list every node beneath them too, so only leaves count. A
cluster without a topology plugin prints nothing on stdout and succeeds (22.05 says `No topology
information available` on stderr, 23.11 and 24.11 nothing): no switch for any node."""

from __future__ import annotations

import re

from collectors.watchers.slurm.states import expand

_FIELDS = re.compile(r"(?:^|\s)(SwitchName|Level|Nodes)=(\S*)")


def leaf_switches(text: str) -> dict[str, str]:
    """node → its leaf switch. A node listed under two leaves (a topology.conf mistake Slurm
    only warns about) keeps the first."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        fields = dict(_FIELDS.findall(line))
        switch, nodes = fields.get("SwitchName"), fields.get("Nodes")
        if switch and fields.get("Level") == "0" and nodes != "(null)":
            for node in expand(nodes):
                found.setdefault(node, switch)
    return found
