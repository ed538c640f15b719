"""No heartbeat from a node for longer than its limit → Notify (node lost), once per silence.

The decision marks the node unreachable (`streams.state.node_incidents`) until a heartbeat comes;
people hear of it through the node's incident, where a silent fleet is one incident, not a
message per node.

The limit is `limit_s`, or `missed` of the intervals the node's last heartbeat said to expect
when that is longer: an agent set to heartbeat every 5 minutes is not lost 2 minutes after each
beat (it was, every 5 minutes, before the node's own interval counted).

Nothing arrives when a node goes quiet, so this rule runs on clock ticks (`NodeTick`): the live
worker ticks every `CENTRALITY_STREAMS_TICK_INTERVAL_S`, replay ticks at the same event times.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

from pydantic import Field

from schemas.events import Notify
from schemas.events.incidents import node_thread
from streams.rules.registry import RuleConfig, rule
from streams.state.internal import NodeTick
from streams.state.node import LOST_RULE, Node

NAME = LOST_RULE


class HeartbeatLostConfig(RuleConfig):
    limit_s: float = Field(
        default=120.0, gt=0, description="Silence longer than this is loss (at the least)."
    )
    missed: float = Field(
        default=3.0,
        gt=0,
        description="Or silence this many of the node's declared heartbeat intervals, if longer.",
    )
    limit_max_s: float = Field(
        default=3600.0,
        gt=0,
        description="However long a node says its interval is, silence this long is loss.",
    )


def silence_limit_s(node: Node, config: HeartbeatLostConfig) -> float:
    declared_s = config.missed * (node.heartbeat_interval_s or 0.0)
    return max(config.limit_s, min(declared_s, config.limit_max_s))


def silence_over(node: Node, config: HeartbeatLostConfig) -> list[datetime]:
    last = node.last_heartbeat_at
    return [] if last is None else [last + timedelta(seconds=silence_limit_s(node, config))]


@rule(NAME, on=(NodeTick,), config=HeartbeatLostConfig, due=silence_over)
def heartbeat_lost(node: Node, event: NodeTick, config: HeartbeatLostConfig) -> Iterator[Notify]:
    last = node.last_heartbeat_at
    if last is None:
        return
    limit_s = silence_limit_s(node, config)
    if (event.occurred_at - last).total_seconds() <= limit_s:
        return
    since = last.isoformat()
    yield Notify.decide(
        cause=event,
        source=f"rule/{NAME}",
        rule=NAME,
        window=f"silent-since-{since}",
        # The words hold only event times and settings: the live clock and replay's tick at
        # other instants, and must still decide the very same decision.
        reason=f"no heartbeat from {node.node_id} since {since} (limit {limit_s:.0f} s)",
        severity=config.severity,
        caused_by=(),
        title=f"Node {node.node_id} lost",
        text=f"Last heartbeat at {since}.",
        incident=node_thread(node.cluster, node.node_id),
        nodes=(node.node_id,),
    )
