"""No heartbeat from a node for longer than `limit_s` → Notify (node lost), once per silence.

Nothing arrives when a node goes quiet, so this rule runs on clock ticks (`NodeTick`): the live
worker ticks every `CENTRALITY_STREAMS_TICK_INTERVAL_S`, replay ticks at the same event times.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from pydantic import Field

from schemas.events import Notify
from streams.rules.registry import RuleConfig, rule
from streams.state.internal import NodeTick
from streams.state.node import Node

NAME = "heartbeat_lost"


class HeartbeatLostConfig(RuleConfig):
    limit_s: float = Field(default=120.0, gt=0, description="Silence longer than this is loss.")


def silence_over(node: Node, config: HeartbeatLostConfig) -> list[datetime]:
    last = node.last_heartbeat_at
    return [] if last is None else [last + timedelta(seconds=config.limit_s)]


@rule(NAME, on=(NodeTick,), config=HeartbeatLostConfig, due=silence_over)
def heartbeat_lost(node: Node, event: NodeTick, config: HeartbeatLostConfig) -> Iterator[Notify]:
    last = node.last_heartbeat_at
    if last is None:
        return
    silent_s = (event.occurred_at - last).total_seconds()
    if silent_s <= config.limit_s:
        return
    since = last.isoformat()
    yield Notify.decide(
        cause=event,
        source=f"rule/{NAME}",
        rule=NAME,
        window=f"silent-since-{since}",
        reason=f"no heartbeat from {node.node_id} for {silent_s:.0f} s "
        f"(limit {config.limit_s:.0f} s)",
        severity=config.severity,
        caused_by=(),
        title=f"Node {node.node_id} lost",
        text=f"Last heartbeat at {since}.",
        incident=f"{NAME}/{node.node_id}/{since}",
        nodes=(node.node_id,),
    )
