"""A fatal XID on a GPU → ask for the node's quarantine (once per quarantine episode); the
benchmark follows once the drain succeeded (`quarantine_story`)."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field, model_validator

from schemas.events import GpuXidObserved, Trigger
from schemas.xids import FATAL_XIDS, describe, is_fatal
from streams.rules.builtin.quarantine import jobs_on, quarantine
from streams.rules.registry import RuleConfig, Severity, rule
from streams.state.node import Node

NAME = "fatal_xid"


class FatalXidConfig(RuleConfig):
    xids: frozenset[int] = Field(
        default=FATAL_XIDS,
        description="XIDs treated as fatal; the default is schemas.xids' catalog (a GPU reset, "
        "a reboot or hands-on service). Xid 154 is judged by the action its message names.",
    )
    severity: Severity = "critical"

    @model_validator(mode="after")
    def never_waits(self) -> FatalXidConfig:
        """A fatal XID is no flapping signal: the GPU needs a reset or more, and every step on
        it meanwhile is lost work. Debouncing it is refused."""
        if self.for_s != 0 or self.for_count != 1:
            raise ValueError("a fatal XID never waits: for_s must be 0 and for_count 1")
        return self


@rule(NAME, on=(GpuXidObserved,), config=FatalXidConfig)
def fatal_xid(node: Node, event: GpuXidObserved, config: FatalXidConfig) -> Iterator[Trigger]:
    p = event.payload
    if not node.may_quarantine_at(event.occurred_at) or not is_fatal(p.xid, p.message, config.xids):
        return
    yield quarantine(
        rule=NAME,
        cause=event,
        nodes=(node.node_id,),
        window=node.episode(event.occurred_at),
        jobs=jobs_on(node, event),
        reason=f"{describe(p.xid)} on GPU {p.gpu}" + (f": {p.message}" if p.message else ""),
        config=config,
        fault=f"xid:{p.xid}",
    )
