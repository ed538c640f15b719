"""JobSet (jobset.x-k8s.io/v1alpha2): a group of Jobs, restarted whole by its failure policy.

Each restart (`status.restarts`) ends an attempt. A restart that counts towards `maxRestarts`
was a failure; one that does not (the `RestartJobSetAndIgnoreMaxRestarts` action, meant for
disruptions such as host maintenance) a preemption. The status keeps the two counts, not their
order: between two looks the failures are taken to have come first. Pods carry the attempt
they belong to (`jobset.sigs.k8s.io/restart-attempt`), so only the current one's count.
"""

from __future__ import annotations

from collectors.watchers.k8s.kinds import job_kind
from collectors.watchers.k8s.objects import (
    Obj,
    epoch,
    nodes_of,
    status_of,
    terminated,
    true_conditions,
)
from collectors.watchers.lifecycle import AttemptEnd, Observation
from schemas.events.jobs import JobState

RESTART_LABEL = "jobset.sigs.k8s.io/restart-attempt"


@job_kind(
    "JobSet",
    api="jobset.x-k8s.io/v1alpha2",
    plural="jobsets",
    pod_labels=("jobset.sigs.k8s.io/jobset-name",),
)
def observe(jobset: Obj, pods: list[Obj]) -> Observation:
    status = status_of(jobset)
    restarts = int(status.get("restarts") or 0)
    counted = int(status.get("restartsCountTowardsMax", restarts) or 0)
    conditions = true_conditions(jobset)
    replicated = status.get("replicatedJobsStatus") or []
    if "Completed" in conditions:
        raw, state = "Completed", JobState.SUCCEEDED
    elif "Failed" in conditions:
        raw, state = "Failed", JobState.FAILED
    elif "Suspended" in conditions:
        raw, state = "Suspended", JobState.PENDING
    elif any(r.get("active") or r.get("ready") for r in replicated):
        raw, state = "Running", JobState.RUNNING
    else:
        raw, state = "Pending", JobState.PENDING
    now = [
        p
        for p in pods
        if ((p.get("metadata") or {}).get("labels") or {}).get(RESTART_LABEL, str(restarts))
        == str(restarts)
    ]
    restarted = [
        AttemptEnd(JobState.FAILED, "Restarted", reason="RestartJobSetFailurePolicyAction")
    ] * min(counted, restarts)
    restarted += [
        AttemptEnd(
            JobState.PREEMPTED,
            "Restarted",
            reason="RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction",
        )
    ] * (restarts - len(restarted))
    condition = conditions.get(raw, {})
    code, why = terminated(now)
    return Observation(
        raw_state=raw,
        state=state,
        attempt=restarts + 1,
        nodes=nodes_of(now),
        reason=condition.get("reason") or why,
        exit_code=code if state in (JobState.SUCCEEDED, JobState.FAILED) else None,
        submitted_at=epoch((jobset.get("metadata") or {}).get("creationTimestamp")),
        ended_at=epoch(condition.get("lastTransitionTime")),
        earlier=tuple(restarted),
    )
