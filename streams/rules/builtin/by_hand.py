"""A story people ended by hand: tell them once that Centrality stopped it.

When the scheduler shows a node Centrality drained back in service, or drained again for a
reason of someone else's, the node's story ends in its fold (`streams.state.node`): no
benchmark, no release, no second drain. Nothing is asked of anyone; people are told once.
"""

from __future__ import annotations

from collections.abc import Iterator

from schemas.events import NodeStateObserved, Notify
from schemas.events.incidents import node_thread
from streams.rules.registry import RuleConfig, rule
from streams.state.node import Node

NAME = "story_ended_by_hand"

_WORDS = {
    "resumed": (
        "returned to service outside Centrality",
        "Centrality stops its story here (no benchmark, no release) and decides afresh on what "
        "happens next.",
    ),
    "taken": (
        "drained by someone else",
        "Centrality stops its story here and will not release the node: whoever drained it does.",
    ),
}


@rule(NAME, on=(NodeStateObserved,), config=RuleConfig)
def story_ended_by_hand(
    node: Node, event: NodeStateObserved, config: RuleConfig
) -> Iterator[Notify]:
    ended = node.ended
    if ended is None or ended.at != event.occurred_at or ended.how not in _WORDS:
        return
    headline, then = _WORDS[ended.how]
    said = f" (the scheduler says: {ended.scheduler_reason})" if ended.scheduler_reason else ""
    yield Notify.decide(
        cause=event,
        source=f"rule/{NAME}",
        rule=NAME,
        window=f"{ended.at.isoformat()}/{ended.how}",
        reason=f"{node.node_id} {headline}{said}",
        severity=config.severity,
        title=f"Node {node.node_id} {headline}",
        text=f"It was out of service because {ended.reason}. {then}",
        incident=node_thread(node.cluster, node.node_id),
        nodes=(node.node_id,),
    )
