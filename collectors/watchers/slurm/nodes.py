"""Nodes as the Slurm controller sees them: `sinfo --json` (22.05's per-node list or 23.11+'s
groups) or, on versions without it, `scontrol show node`; and the maintenance windows Centrality
opened on some of them (`scontrol show reservation -o`). Beside its state, a node's partitions
and active features (the facts node groups select by) and its leaf switch (`topology.py`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from collectors.watchers.slurm.states import expand, node_state
from schemas.events.nodes import DRAIN_REASON_PREFIX, SchedulerNodeState
from schemas.slurm import WINDOW_PREFIX, slurm_node_words

# scontrol appends who set the reason and when: `Reason=disk [root@2024-01-01T00:00:00]`.
_REASON_STAMP = re.compile(r"\s*\[[^\]]*@[^\]]*\]\s*$")
_SCONTROL_FIELDS = re.compile(
    r"(?:^|\s)(NodeName|State|Reason|Partitions|ActiveFeatures)=(.*?)(?=\s+\w+=|\s*$)", re.M
)


@dataclass(frozen=True)
class NodeView:
    name: str
    words: tuple[str, ...]  # base state first, then flags, upper case
    reason: str | None
    window: str | None = None  # the Centrality maintenance window (reservation) it is in
    partitions: tuple[str, ...] = ()
    features: tuple[str, ...] = ()  # active ones (a changeable feature not booted into is not)
    switch: str | None = None  # the leaf switch it hangs off (Slurm's topology), if one is known

    @property
    def state(self) -> SchedulerNodeState:
        state = node_state(list(self.words))
        if self.window is not None and state is SchedulerNodeState.AVAILABLE:
            # Resumed only inside Centrality's own MAINT reservation: no one else's job lands
            # there, and the adapter drains it again when its run is over.
            return SchedulerNodeState.DRAINED
        return state

    @property
    def said(self) -> str | None:
        """The reason people read: a window's, while the node is resumed inside it."""
        if self.window is not None and node_state(list(self.words)) is SchedulerNodeState.AVAILABLE:
            return f"{DRAIN_REASON_PREFIX} maintenance window {self.window}"
        return self.reason

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


def _features(value: Any) -> tuple[str, ...]:
    """A comma-separated feature list as Slurm prints it (`(null)` or empty: none)."""
    text = str(value or "")
    return tuple(f for f in text.split(",") if f and f != "(null)")


def from_sinfo(doc: dict[str, Any]) -> list[NodeView]:
    found: dict[str, NodeView] = {}
    for node in doc.get("nodes") or []:  # 22.05: one entry per node
        view = NodeView(
            node["name"],
            _words(node.get("state"), node.get("state_flags")),
            _reason(node.get("reason")),
            partitions=tuple(node.get("partitions") or ()),
            features=_features(node.get("active_features", node.get("features"))),
        )
        found[view.name] = view
    for group in doc.get("sinfo") or []:  # 23.11+: nodes grouped by partition and state
        words = _words((group.get("node") or {}).get("state"))
        reason = _reason(group.get("reason"))
        partition = (group.get("partition") or {}).get("name")
        features = _features((group.get("features") or {}).get("active"))
        for entry in (group.get("nodes") or {}).get("nodes") or []:
            for name in expand(entry):
                # A node in several partitions is in a group of each.
                known = found[name].partitions if name in found else ()
                partitions = (*known, partition) if partition and partition not in known else known
                found[name] = NodeView(name, words, reason, None, partitions, features)
    return list(found.values())


def from_scontrol(text: str) -> list[NodeView]:
    views = []
    for block in re.split(r"\n(?=NodeName=)", text.strip()):
        fields = dict(_SCONTROL_FIELDS.findall(block))
        if "NodeName" in fields:
            reason = _REASON_STAMP.sub("", fields.get("Reason", ""))
            view = NodeView(
                fields["NodeName"],
                _words(fields.get("State")),
                _reason(reason),
                partitions=_features(fields.get("Partitions")),
                features=_features(fields.get("ActiveFeatures")),
            )
            views.append(view)
    return views


def windows_of(text: str) -> dict[str, str]:
    """node → the Centrality maintenance window it is in, from `scontrol show reservation -o`
    (one reservation a line; "No reservations in the system" when there is none)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        fields: dict[str, str] = dict(
            re.findall(r"(?:^|\s)(ReservationName|Nodes|State)=(\S*)", line)
        )
        name = fields.get("ReservationName", "")
        if name.startswith(WINDOW_PREFIX) and fields.get("State") == "ACTIVE":
            for node in expand(fields.get("Nodes")):
                found[node] = name
    return found
