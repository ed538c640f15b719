"""Kubeflow Training Operator's PyTorchJob (kubeflow.org/v1): its latest true condition."""

from __future__ import annotations

from collectors.watchers.k8s.kinds import job_kind
from collectors.watchers.k8s.objects import Obj, epoch, nodes_of, status_of, terminated
from collectors.watchers.lifecycle import Observation
from schemas.events.jobs import JobState

_STATES = {
    "Created": JobState.PENDING,
    "Running": JobState.RUNNING,
    "Restarting": JobState.RUNNING,
    "Succeeded": JobState.SUCCEEDED,
    "Failed": JobState.FAILED,
}


@job_kind(
    "PyTorchJob",
    api="kubeflow.org/v1",
    plural="pytorchjobs",
    pod_labels=("training.kubeflow.org/job-name", "pytorch-job-name"),
)
def observe(job: Obj, pods: list[Obj]) -> Observation:
    conditions = [
        c for c in status_of(job).get("conditions") or [] if str(c.get("status")) == "True"
    ]
    last = conditions[-1] if conditions else {"type": "Created"}
    state = _STATES.get(str(last["type"]), JobState.UNKNOWN)
    code, why = terminated(pods)
    status = status_of(job)
    return Observation(
        raw_state=str(last["type"]),
        state=state,
        nodes=nodes_of(pods),
        reason=last.get("reason") or why,
        exit_code=code if state in (JobState.SUCCEEDED, JobState.FAILED) else None,
        submitted_at=epoch((job.get("metadata") or {}).get("creationTimestamp")),
        started_at=epoch(status.get("startTime")),
        ended_at=epoch(status.get("completionTime") or last.get("lastTransitionTime")),
    )
