"""What Kubernetes objects say, read off the plain dicts the API serves (pure functions shared
by the job kinds in `kinds/`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from collectors.watchers.lifecycle import AttemptEnd
from schemas.events.jobs import JobState

Obj = dict[str, Any]

# Why a pod ended that is no fault of its own (the `DisruptionTarget` reasons of Kubernetes
# 1.26+, and the pod `status.reason` older kubelets leave): a preemption, never a failure.
DISRUPTED_REASONS = frozenset({"Evicted", "Preempting", "NodeShutdown", "Terminated"})


def epoch(stamp: Any) -> float | None:
    if not stamp:
        return None
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()


def status_of(obj: Obj) -> Obj:
    return obj.get("status") or {}


def true_conditions(obj: Obj) -> dict[str, Obj]:
    """The conditions whose status is True, by type (the last of a type wins)."""
    conditions = status_of(obj).get("conditions") or []
    return {str(c.get("type")): c for c in conditions if str(c.get("status")) == "True"}


def terminated(pods: list[Obj]) -> tuple[int | None, str | None]:
    """Exit code and reason of the last container that ended badly (else the last one)."""
    found: tuple[int | None, str | None] = (None, None)
    for pod in pods:
        for status in status_of(pod).get("containerStatuses") or []:
            ended = (status.get("state") or {}).get("terminated")
            if ended:
                code = ended.get("exitCode")
                if found[0] in (None, 0) or code:
                    found = (code, ended.get("reason"))
    return found


def nodes_of(pods: list[Obj]) -> tuple[str, ...]:
    return tuple(
        sorted({p["spec"]["nodeName"] for p in pods if (p.get("spec") or {}).get("nodeName")})
    )


def failed(pod: Obj) -> bool:
    return status_of(pod).get("phase") == "Failed"


def disruption(pod: Obj) -> str | None:
    """Why the pod was disrupted (preempted, evicted, its node drained or shut down), if it was."""
    target = true_conditions(pod).get("DisruptionTarget")
    if target is not None:
        return str(target.get("reason") or "DisruptionTarget")
    reason = status_of(pod).get("reason")
    return str(reason) if reason in DISRUPTED_REASONS else None


def ended_at(pod: Obj) -> float:
    """When the pod's containers last ended (else when it was made): pods in the order they
    failed."""
    stamps = [
        ((s.get("state") or {}).get("terminated") or {}).get("finishedAt")
        for s in status_of(pod).get("containerStatuses") or []
    ]
    meta = pod.get("metadata") or {}
    return max(
        (epoch(s) or 0.0 for s in stamps if s),
        default=epoch(meta.get("creationTimestamp")) or 0.0,
    )


def attempt_end(pod: Obj) -> AttemptEnd:
    """How the attempt that `pod` ran ended: a disruption is a preemption, else a failure."""
    code, why = terminated([pod])
    disrupted = disruption(pod)
    raw = str(status_of(pod).get("reason") or status_of(pod).get("phase") or "Failed")
    return AttemptEnd(
        state=JobState.PREEMPTED if disrupted else JobState.FAILED,
        raw_state=raw,
        exit_code=code,
        reason=disrupted or why,
        nodes=nodes_of([pod]),
    )
