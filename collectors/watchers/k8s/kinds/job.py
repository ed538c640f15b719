"""batch/v1 Jobs: each pod failure the Job controller counts (and retries) ends an attempt.

A failed pod is a failure of its attempt on its node, unless it was disrupted (preempted,
evicted, its node drained): that is a preemption. Pods the Job's `podFailurePolicy` ignores are
not counted by the controller, so not here either. Jobs a JobSet or a RayJob controls are
parts of those jobs, not jobs of their own.
"""

from __future__ import annotations

from typing import Any

from collectors.watchers.k8s.kinds import job_kind
from collectors.watchers.k8s.objects import (
    Obj,
    attempt_end,
    ended_at,
    epoch,
    failed,
    nodes_of,
    status_of,
    terminated,
    true_conditions,
)
from collectors.watchers.lifecycle import AttemptEnd, Observation
from schemas.events.jobs import JobState

# Controllers whose Jobs belong to a job of their own kind (a JobSet's replicated jobs, a
# RayJob's submitter).
PART_OF = frozenset({"JobSet", "RayJob"})


def own(job: Obj) -> bool:
    owners = (job.get("metadata") or {}).get("ownerReferences") or []
    return not any(o.get("controller") and o.get("kind") in PART_OF for o in owners)


@job_kind(
    "Job",
    api="batch/v1",
    plural="jobs",
    pod_labels=("batch.kubernetes.io/job-name", "job-name"),
    own=own,
)
def observe(job: Obj, pods: list[Obj]) -> Observation:
    status = status_of(job)
    count = int(status.get("failed") or 0)
    conditions = true_conditions(job)
    if "Complete" in conditions:
        raw, state, attempt = "Complete", JobState.SUCCEEDED, count + 1
    elif "Failed" in conditions:
        raw, state, attempt = "Failed", JobState.FAILED, max(count, 1)
    elif status.get("active"):
        raw, state, attempt = "Active", JobState.RUNNING, count + 1
    else:
        raw, state, attempt = "Pending", JobState.PENDING, count + 1
    # The controller counts failed pods in the order they failed (newer ones may be uncounted
    # yet): the first `attempt - 1` ended the earlier attempts.
    counted = sorted((p for p in pods if failed(p) and not _ignored(job, p)), key=ended_at)
    before = counted[: attempt - 1]
    now = [p for p in pods if not any(p is b for b in before)]
    earlier = [attempt_end(p) for p in before]
    earlier += [_gone()] * (attempt - 1 - len(earlier))
    condition = conditions.get(raw, {})
    code, why = terminated(now)
    reason = condition.get("reason") or why
    return Observation(
        raw_state=raw,
        state=state,
        attempt=attempt,
        nodes=nodes_of(now),
        reason=f"{reason}: {why}" if why and reason != why else reason,
        exit_code=code if state in (JobState.SUCCEEDED, JobState.FAILED) else None,
        submitted_at=epoch((job.get("metadata") or {}).get("creationTimestamp")),
        started_at=epoch(status.get("startTime")),
        ended_at=epoch(status.get("completionTime") or condition.get("lastTransitionTime")),
        earlier=tuple(earlier),
    )


def _gone() -> AttemptEnd:
    """A failure the controller counted whose pod the API no longer holds (garbage-collected)."""
    return AttemptEnd(JobState.FAILED, "Failed", reason="pod failed (no longer listed)")


def _ignored(job: Obj, pod: Obj) -> bool:
    """The first `podFailurePolicy` rule that matches the pod decides; `Ignore` is not counted."""
    policy = ((job.get("spec") or {}).get("podFailurePolicy") or {}).get("rules") or []
    for rule in policy:
        if _matches(rule, pod):
            return bool(rule.get("action") == "Ignore")
    return False


def _matches(rule: dict[str, Any], pod: Obj) -> bool:
    conditions = status_of(pod).get("conditions") or []
    for pattern in rule.get("onPodConditions") or []:
        wanted = (pattern.get("type"), pattern.get("status", "True"))
        if any((c.get("type"), c.get("status")) == wanted for c in conditions):
            return True
    codes = rule.get("onExitCodes")
    if not codes:
        return False
    values = set(codes.get("values") or [])
    for status in status_of(pod).get("containerStatuses") or []:
        if codes.get("containerName") not in (None, status.get("name")):
            continue
        code = ((status.get("state") or {}).get("terminated") or {}).get("exitCode")
        # Containers that succeeded are left out of the requirement (the API's rule).
        if code and (code in values) == (codes.get("operator") == "In"):
            return True
    return False
