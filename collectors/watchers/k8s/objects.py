"""What Jobs, PyTorchJobs and their Pods say, in scheduler-agnostic terms (pure functions)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from collectors.watchers.lifecycle import Observation
from schemas.events.jobs import JobState

JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
PYTORCHJOB_LABELS = ("training.kubeflow.org/job-name", "pytorch-job-name")
_PYTORCH_STATES = {
    "Created": JobState.PENDING,
    "Running": JobState.RUNNING,
    "Restarting": JobState.RUNNING,
    "Succeeded": JobState.SUCCEEDED,
    "Failed": JobState.FAILED,
}


def _epoch(stamp: Any) -> float | None:
    if not stamp:
        return None
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()


def owners(pod: dict[str, Any]) -> set[tuple[str, str]]:
    """(kind, name) of the Job or PyTorchJob a pod was made for, read off their controllers'
    labels (selectors are applied here, not by the server)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return {
        (kind, str(labels[key]))
        for kind, keys in (("Job", JOB_NAME_LABELS), ("PyTorchJob", PYTORCHJOB_LABELS))
        for key in keys
        if labels.get(key)
    }


def _terminated(pods: list[dict[str, Any]]) -> tuple[int | None, str | None]:
    """Exit code and reason of the last container that ended badly (else the last one)."""
    found: tuple[int | None, str | None] = (None, None)
    for pod in pods:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            ended = (status.get("state") or {}).get("terminated")
            if ended:
                code = ended.get("exitCode")
                if found[0] in (None, 0) or code:
                    found = (code, ended.get("reason"))
    return found


def _nodes(pods: list[dict[str, Any]]) -> tuple[str, ...]:
    return tuple(
        sorted({p["spec"]["nodeName"] for p in pods if (p.get("spec") or {}).get("nodeName")})
    )


def _true_conditions(obj: dict[str, Any]) -> list[dict[str, Any]]:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return [c for c in conditions if str(c.get("status")) == "True"]


def job_observation(job: dict[str, Any], pods: list[dict[str, Any]]) -> Observation:
    status = job.get("status") or {}
    failed = int(status.get("failed") or 0)
    conditions = {c["type"]: c for c in _true_conditions(job)}
    code, why = _terminated(pods)
    if "Complete" in conditions:
        raw, state, attempt = "Complete", JobState.SUCCEEDED, failed + 1
    elif "Failed" in conditions:
        raw, state, attempt = "Failed", JobState.FAILED, max(failed, 1)
    elif status.get("active"):
        raw, state, attempt = "Active", JobState.RUNNING, failed + 1
    else:
        raw, state, attempt = "Pending", JobState.PENDING, failed + 1
    condition = conditions.get(raw, {})
    reason = condition.get("reason") or why
    return Observation(
        raw_state=raw,
        state=state,
        attempt=attempt,
        nodes=_nodes(pods),
        reason=f"{reason}: {why}" if why and reason != why else reason,
        exit_code=code if state in (JobState.SUCCEEDED, JobState.FAILED) else None,
        submitted_at=_epoch(job.get("metadata", {}).get("creationTimestamp")),
        started_at=_epoch(status.get("startTime")),
        ended_at=_epoch(status.get("completionTime") or condition.get("lastTransitionTime")),
    )


def pytorchjob_observation(job: dict[str, Any], pods: list[dict[str, Any]]) -> Observation:
    conditions = _true_conditions(job)
    last = conditions[-1] if conditions else {"type": "Created"}
    state = _PYTORCH_STATES.get(last["type"], JobState.UNKNOWN)
    code, why = _terminated(pods)
    status = job.get("status") or {}
    return Observation(
        raw_state=last["type"],
        state=state,
        nodes=_nodes(pods),
        reason=last.get("reason") or why,
        exit_code=code if state in (JobState.SUCCEEDED, JobState.FAILED) else None,
        submitted_at=_epoch(job.get("metadata", {}).get("creationTimestamp")),
        started_at=_epoch(status.get("startTime")),
        ended_at=_epoch(status.get("completionTime") or last.get("lastTransitionTime")),
    )
