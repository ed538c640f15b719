"""How the Kubernetes watcher reads Jobs, PyTorchJobs, JobSets, RayJobs and failed pods: on
statuses published from real clusters (tests/fixtures/realworld/k8s/, provenance beside them),
and the pod-counting rules of the Job controller that decide what ended an attempt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from collectors.watchers.k8s.kinds import job_kinds
from collectors.watchers.k8s.objects import attempt_end
from schemas.events.jobs import JobState

CASES = yaml.safe_load(
    (Path(__file__).parents[2] / "fixtures" / "realworld" / "k8s" / "cases.yaml").read_text()
)
KINDS = job_kinds()


@pytest.mark.parametrize(
    "case", [c for c in CASES if c["kind"] != "pod"], ids=lambda c: c["source"]
)
def test_published_job_statuses(case: dict[str, Any]) -> None:
    seen = KINDS[case["kind"]].observe(case["object"], case.get("pods") or [])
    expect = case["expect"]
    assert (seen.state, seen.raw_state, seen.attempt) == (
        JobState(expect["state"]),
        expect["raw_state"],
        expect["attempt"],
    )
    assert seen.reason == expect["reason"]
    assert [end.state for end in seen.earlier] == [JobState(s) for s in expect["earlier"]]


@pytest.mark.parametrize(
    "case", [c for c in CASES if c["kind"] == "pod"], ids=lambda c: c["source"]
)
def test_published_failed_pods(case: dict[str, Any]) -> None:
    end = attempt_end(case["object"])
    expect = case["expect"]
    assert (end.state, end.reason) == (JobState(expect["state"]), expect["reason"])
    if "raw_state" in expect:
        assert end.raw_state == expect["raw_state"]
    assert list(end.nodes) == expect.get("nodes", [])


def _pod(name: str, code: int, finished: str, **status: Any) -> dict[str, Any]:
    ended = {"exitCode": code, "reason": "Error", "finishedAt": finished}
    return {
        "metadata": {"name": name, "labels": {"job-name": "train"}},
        "spec": {"nodeName": f"node-{name}"},
        "status": {
            "phase": "Failed",
            "containerStatuses": [{"name": "main", "state": {"terminated": ended}}],
            **status,
        },
    }


DRAINED = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
IGNORE_DISRUPTIONS = {
    "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
}


def _job(failed: int, policy: dict[str, Any] | None = None) -> dict[str, Any]:
    spec = {"podFailurePolicy": policy} if policy else {}
    return {"metadata": {"name": "train"}, "spec": spec, "status": {"failed": failed, "active": 1}}


def test_each_counted_pod_failure_ends_its_attempt_where_it_ran() -> None:
    pods = [_pod("b", 137, "2026-01-01T00:02:00Z"), _pod("a", 1, "2026-01-01T00:01:00Z")]
    seen = KINDS["jobs"].observe(_job(failed=2), pods)
    assert seen.attempt == 3
    assert [(e.state, e.exit_code, e.nodes) for e in seen.earlier] == [
        (JobState.FAILED, 1, ("node-a",)),
        (JobState.FAILED, 137, ("node-b",)),
    ]


def test_a_disrupted_pod_the_controller_counted_is_a_preemption() -> None:
    drained = _pod("a", 143, "2026-01-01T00:01:00Z", conditions=[DRAINED])
    [end] = KINDS["jobs"].observe(_job(failed=1), [drained]).earlier
    assert (end.state, end.reason) == (JobState.PREEMPTED, "EvictionByEvictionAPI")


def test_pods_the_failure_policy_ignores_are_not_counted() -> None:
    drained = _pod("a", 143, "2026-01-01T00:01:00Z", conditions=[DRAINED])
    crashed = _pod("b", 1, "2026-01-01T00:02:00Z")
    seen = KINDS["jobs"].observe(_job(failed=1, policy=IGNORE_DISRUPTIONS), [drained, crashed])
    assert seen.attempt == 2
    [end] = seen.earlier
    assert (end.state, end.exit_code, end.nodes) == (JobState.FAILED, 1, ("node-b",))


def test_a_pod_failure_not_yet_counted_belongs_to_the_running_attempt() -> None:
    seen = KINDS["jobs"].observe(_job(failed=0), [_pod("a", 1, "2026-01-01T00:01:00Z")])
    assert (seen.attempt, seen.earlier, seen.state) == (1, (), JobState.RUNNING)


def test_jobs_a_jobset_or_rayjob_controls_are_parts_not_jobs() -> None:
    def owned(kind: str) -> dict[str, Any]:
        owner = {"kind": kind, "name": "x", "uid": "u", "controller": True}
        return {"metadata": {"name": "x", "ownerReferences": [owner]}}

    assert not KINDS["jobs"].own(owned("JobSet"))
    assert not KINDS["jobs"].own(owned("RayJob"))
    assert KINDS["jobs"].own(owned("CronJob"))


def test_jobset_restarts_are_attempts_those_not_counted_preemptions() -> None:
    jobset = {
        "metadata": {"name": "js"},
        "status": {
            "restarts": 3,
            "restartsCountTowardsMax": 1,
            "conditions": [{"type": "Failed", "status": "True", "reason": "ReachedMaxRestarts"}],
        },
    }
    seen = KINDS["jobsets"].observe(jobset, [])
    assert (seen.state, seen.attempt, seen.reason) == (JobState.FAILED, 4, "ReachedMaxRestarts")
    assert [e.state for e in seen.earlier] == [
        JobState.FAILED,
        JobState.PREEMPTED,
        JobState.PREEMPTED,
    ]


def test_a_retrying_rayjob_ended_its_attempt_as_a_failure() -> None:
    rayjob = {
        "metadata": {"name": "r"},
        "status": {"jobDeploymentStatus": "Retrying", "failed": 1, "rayClusterName": "r-abc"},
    }
    seen = KINDS["rayjobs"].observe(rayjob, [])
    assert (seen.state, seen.attempt, [e.state for e in seen.earlier]) == (
        JobState.PENDING,
        2,
        [JobState.FAILED],
    )
