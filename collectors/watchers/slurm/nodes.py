"""Nodes as the Slurm controller sees them: `sinfo --json` (22.05's per-node list or 23.11+'s
groups) or, on versions without it, `scontrol show node`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from collectors.watchers.slurm.states import expand, node_state
from schemas.events.nodes import SchedulerNodeState
from schemas.slurm import slurm_node_words

# scontrol appends who set the reason and when: `Reason=disk [root@2024-01-01T00:00:00]`.
_REASON_STAMP = re.compile(r"\s*\[[^\]]*@[^\]]*\]\s*$")


@dataclass(frozen=True)
class NodeView:
    name: str
    words: tuple[str, ...]  # base state first, then flags, upper case
    reason: str | None

    @property
    def state(self) -> SchedulerNodeState:
        return node_state(list(self.words))

    @property
    def raw_state(self) -> str:
        return "+".join(self.words)


def _words(state: Any, flags: Any = ()) -> tuple[str, ...]:
    if isinstance(state, list):
        return tuple(str(w).upper() for w in [*state, *(flags or [])])
    return slurm_node_words("+".join([str(state or "UNKNOWN"), *map(str, flags or [])]))


def _reason(value: Any) -> str | None:
    text = value.get("description") if isinstance(value, dict) else value
    return str(text) if text not in (None, "", "None", "(null)") else None


def from_sinfo(doc: dict[str, Any]) -> list[NodeView]:
    found: dict[str, NodeView] = {}
    for node in doc.get("nodes") or []:  # 22.05: one entry per node
        view = NodeView(
            node["name"],
            _words(node.get("state"), node.get("state_flags")),
            _reason(node.get("reason")),
        )
        found[view.name] = view
    for group in doc.get("sinfo") or []:  # 23.11+: nodes grouped by partition and state
        words = _words((group.get("node") or {}).get("state"))
        reason = _reason(group.get("reason"))
        for entry in (group.get("nodes") or {}).get("nodes") or []:
            for name in expand(entry):
                found[name] = NodeView(name, words, reason)
    return list(found.values())


def from_scontrol(text: str) -> list[NodeView]:
    views = []
    for block in re.split(r"\n(?=NodeName=)", text.strip()):
        fields = dict(
            re.findall(r"(?:^|\s)(NodeName|State|Reason)=(.*?)(?=\s+\w+=|\s*$)", block, re.M)
        )
        if "NodeName" in fields:
            reason = _REASON_STAMP.sub("", fields.get("Reason", ""))
            views.append(NodeView(fields["NodeName"], _words(fields.get("State")), _reason(reason)))
    return views
