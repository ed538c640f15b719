"""KubeRay's RayJob (ray.io/v1): a RayCluster made for one Ray job, and that job.

The deployment status says where the RayJob is (`jobDeploymentStatus`), the Ray job's own
status what the job did (`jobStatus`); they can disagree (a deadline or a failed submission
fails the deployment while the Ray job still reads RUNNING), and the deployment wins. With a
`backoffLimit`, each retry (`status.failed`) ends an attempt on a new RayCluster. Its nodes are
those of the RayCluster's pods (`ray.io/cluster` = `status.rayClusterName`). The submitter Job
the RayJob makes is part of it (kinds/job.py leaves it out).
"""

from __future__ import annotations

from collectors.watchers.k8s.kinds import job_kind
from collectors.watchers.k8s.objects import Obj, epoch, nodes_of, status_of
from collectors.watchers.lifecycle import AttemptEnd, Observation
from schemas.events.jobs import JobState

_RAY_JOB = {
    "SUCCEEDED": JobState.SUCCEEDED,
    "FAILED": JobState.FAILED,
    "STOPPED": JobState.CANCELLED,
    "RUNNING": JobState.RUNNING,
}


def cluster(rayjob: Obj) -> str | None:
    return str(status_of(rayjob).get("rayClusterName") or "") or None


@job_kind(
    "RayJob",
    api="ray.io/v1",
    plural="rayjobs",
    pod_labels=("ray.io/cluster",),
    link=cluster,
)
def observe(rayjob: Obj, pods: list[Obj]) -> Observation:
    status = status_of(rayjob)
    deployment = str(status.get("jobDeploymentStatus") or "New")
    ray = str(status.get("jobStatus") or "")
    retries = int(status.get("failed") or 0)
    if deployment == "Complete":
        state = _RAY_JOB.get(ray, JobState.UNKNOWN)
    elif deployment in ("Failed", "ValidationFailed"):
        state = JobState.FAILED
    elif deployment == "Running":
        state = _RAY_JOB.get(ray, JobState.PENDING)
    else:  # New, Initializing, Waiting, Suspending, Suspended, Retrying
        state = JobState.PENDING
    # The failures counted so far include the last attempt's, once the RayJob failed for good.
    attempt = max(retries, 1) if state == JobState.FAILED else retries + 1
    reason = status.get("reason") or status.get("message") or None
    return Observation(
        raw_state=f"{deployment}/{ray}" if ray else deployment,
        state=state,
        attempt=attempt,
        nodes=nodes_of(pods),
        reason=str(reason)[:500] if reason else None,
        submitted_at=epoch((rayjob.get("metadata") or {}).get("creationTimestamp")),
        started_at=epoch(status.get("startTime")),
        ended_at=epoch(status.get("endTime")),
        earlier=(AttemptEnd(JobState.FAILED, "Retrying", reason="the Ray job failed"),)
        * (attempt - 1),
    )
