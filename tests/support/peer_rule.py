"""A node rule that names another node: on a fatal XID it asks for the quarantine of the node
and of a configured peer. Nothing built in does this; it breaks the premise that lets replay cut
the brain into parts (`streams.brain.parts`), so tests use it to see that premise checked."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from schemas.events import GpuXidObserved, Trigger
from streams.rules.builtin.quarantine import quarantine
from streams.rules.registry import RuleConfig, rule
from streams.state.node import Node

MODULE = __name__


class PeerConfig(RuleConfig):
    peer: str = Field(default="", description="The node quarantined with any node's XID.")


@rule("quarantine_peer", on=(GpuXidObserved,), config=PeerConfig)
def quarantine_peer(node: Node, event: GpuXidObserved, config: PeerConfig) -> Iterator[Trigger]:
    if config.peer and config.peer != node.node_id:
        yield quarantine(
            rule="quarantine_peer",
            cause=event,
            nodes=(node.node_id, config.peer),
            window=str(event.event_id),
            reason=f"XID {event.payload.xid} on {node.node_id}; {config.peer} goes with it",
            config=config,
        )
