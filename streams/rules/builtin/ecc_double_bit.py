"""An uncorrectable (double-bit) ECC error → ask for the node's quarantine (the benchmark follows
once the drain succeeded)."""

from __future__ import annotations

from collections.abc import Iterator

from schemas.events import GpuSampled, Trigger
from streams.rules.builtin.quarantine import jobs_on, quarantine
from streams.rules.registry import RuleConfig, Severity, rule
from streams.state.node import Node

NAME = "ecc_double_bit"


class EccDoubleBitConfig(RuleConfig):
    severity: Severity = "critical"


@rule(NAME, on=(GpuSampled,), config=EccDoubleBitConfig)
def ecc_double_bit(node: Node, event: GpuSampled, config: EccDoubleBitConfig) -> Iterator[Trigger]:
    gpu = node.gpus.get(event.payload.gpu)
    # Only the sample where the (cumulative) counter rose: an old count does not re-quarantine.
    if (
        gpu is None
        or gpu.ecc_double_bit_rose_at != event.occurred_at
        or not node.may_quarantine_at(event.occurred_at)
    ):
        return
    yield quarantine(
        rule=NAME,
        cause=event,
        nodes=(node.node_id,),
        window=node.episode(event.occurred_at),
        jobs=jobs_on(node, event),
        reason=f"{gpu.ecc_double_bit} uncorrectable ECC error(s) on GPU {event.payload.gpu}",
        config=config,
    )
