"""Builders of node and job events for the streams tests (on top of tests.factories)."""

from __future__ import annotations

import uuid
from typing import Any

from schemas.events import (
    ActionFailed,
    ActionSucceeded,
    BenchmarkCompleted,
    GpuSampled,
    GpuXidObserved,
    JobExited,
    JobStateChanged,
    NodeHealthChecked,
    NodeHeartbeat,
    NodeStateObserved,
    Trigger,
)
from tests.factories import envelope, exited

NODES = ("n1", "n2")


def running(
    job: str, attempt: int = 1, at_s: float = 0.0, nodes: tuple[str, ...] = NODES
) -> JobStateChanged:
    return JobStateChanged(
        **envelope(job, at_s),
        payload={"state": "RUNNING", "raw_state": "RUNNING", "attempt": attempt, "nodes": nodes},
    )


def ended(
    job: str,
    state: str = "FAILED",
    attempt: int = 1,
    at_s: float = 0.0,
    nodes: tuple[str, ...] = NODES,
    exit_code: int | None = 1,
) -> JobExited:
    return exited(state, attempt, subject=job, at_s=at_s, exit_code=exit_code, nodes=nodes)


def heartbeat(node: str = "n1", at_s: float = 0.0) -> NodeHeartbeat:
    return NodeHeartbeat(
        **envelope(node, at_s), payload={"agent_version": "t", "gpus": 8, "interval_s": 10}
    )


def health(
    node: str, check: str, status: str, at_s: float = 0.0, message: str = ""
) -> NodeHealthChecked:
    return NodeHealthChecked(
        **envelope(node, at_s), payload={"check": check, "status": status, "message": message}
    )


def xid(node: str = "n1", code: int = 79, at_s: float = 0.0, gpu: int = 0) -> GpuXidObserved:
    return GpuXidObserved(**envelope(node, at_s), payload={"gpu": gpu, "xid": code})


def sample(node: str = "n1", gpu: int = 0, at_s: float = 0.0, **counters: Any) -> GpuSampled:
    return GpuSampled(**envelope(node, at_s), payload={"gpu": gpu, **counters})


def benchmark(
    node: str = "n1",
    verdict: str = "pass",
    at_s: float = 0.0,
    trigger: Trigger | None = None,
) -> BenchmarkCompleted:
    return BenchmarkCompleted(
        **envelope(node, at_s),
        payload={
            "trigger_id": trigger.event_id if trigger else None,
            "node": node,
            "verdict": verdict,
            "reasons": () if verdict == "pass" else ("slow",),
        },
    )


def result(
    trigger: Trigger,
    at_s: float = 0.0,
    *,
    error: str | None = None,
    refused: bool = False,
    dry_run: bool = False,
    held_by: str | None = None,
) -> ActionSucceeded | ActionFailed:
    """What an action worker reports about `trigger`: succeeded, or failed with `error`.

    The id derives from the trigger and the outcome, so building it twice gives the same event
    (a redelivery)."""
    common: dict[str, Any] = {
        "trigger_id": trigger.event_id,
        "trigger_type": trigger.type,
        "action": trigger.type.lower(),
        "dry_run": dry_run,
        "nodes": getattr(trigger.payload, "nodes", ()),
        "operator": trigger.payload.operator,
        "reason": trigger.payload.reason,
        "forced": trigger.payload.force,
    }
    envelope_ = {
        **envelope(trigger.subject, at_s),
        "event_id": uuid.uuid5(trigger.event_id, f"{error}/{refused}/{dry_run}"),
        "source": "actions",
    }
    if error is None:
        return ActionSucceeded(**envelope_, payload=common)
    return ActionFailed(
        **envelope_,
        payload={
            **common,
            "error": error,
            "permanent": True,
            "refused": refused,
            "held_by": held_by,
        },
    )


def scheduler_says(
    node: str = "n1", state: str = "DRAINED", at_s: float = 0.0, reason: str | None = "admin"
) -> NodeStateObserved:
    return NodeStateObserved(
        **envelope(node, at_s),
        payload={"state": state, "raw_state": state, "reason": reason, "scheduler": "slurm"},
    )
