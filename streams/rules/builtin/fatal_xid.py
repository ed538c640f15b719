"""A fatal XID on a GPU → ask for the node's quarantine (once per quarantine episode); the
benchmark follows once the drain succeeded (`quarantine_story`)."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from schemas.events import GpuXidObserved, Trigger
from streams.rules.builtin.quarantine import quarantine
from streams.rules.registry import RuleConfig, Severity, rule
from streams.state.node import Node

NAME = "fatal_xid"

# NVIDIA's XIDs that mean the GPU (not the program) is broken or needs a reset.
FATAL_XIDS = frozenset({48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140})


class FatalXidConfig(RuleConfig):
    xids: frozenset[int] = Field(default=FATAL_XIDS, description="XIDs treated as fatal.")
    severity: Severity = "critical"


@rule(NAME, on=(GpuXidObserved,), config=FatalXidConfig)
def fatal_xid(node: Node, event: GpuXidObserved, config: FatalXidConfig) -> Iterator[Trigger]:
    p = event.payload
    if p.xid not in config.xids or not node.may_quarantine:
        return
    yield quarantine(
        rule=NAME,
        cause=event,
        nodes=(node.node_id,),
        window=node.episode,
        reason=f"XID {p.xid} on GPU {p.gpu}" + (f": {p.message}" if p.message else ""),
        config=config,
    )
