"""The Kubernetes watcher against a test API server (kmock, from tests/support/kube.py)."""

from pathlib import Path
from typing import Any

import pytest
import requests

from collectors.sink import RecordingSink
from collectors.watchers.k8s.settings import K8sWatchSettings
from collectors.watchers.k8s.watcher import K8sWatcher
from schemas.envelope import Event
from schemas.events import JobExited, NodeHealthChecked
from schemas.events.jobs import JobState
from schemas.events.nodes import HealthStatus
from tests.support.kube import KubeApi

pytestmark = pytest.mark.integration

JOBS = "apis/batch/v1/namespaces/ml/jobs"
PYTORCHJOBS = "apis/kubeflow.org/v1/namespaces/ml/pytorchjobs"


def patch(kube: KubeApi, path: str, body: dict[str, Any]) -> None:
    reply = requests.patch(
        f"{kube.url}/{path}",
        json=body,
        headers={"Content-Type": "application/merge-patch+json"},
        timeout=5,
    )
    reply.raise_for_status()


def watcher(kube: KubeApi, tmp_path: Path, sink: RecordingSink) -> K8sWatcher:
    settings = K8sWatchSettings(host=kube.url, cluster="k1", state_file=tmp_path / "ledger.json")
    return K8sWatcher(settings, sink)


def summary(events: list[Event], subject: str) -> list[tuple[str, Any, int]]:
    return [
        (e.type, getattr(e.payload, "state", None), getattr(e.payload, "attempt", 1))
        for e in events
        if e.subject == subject
    ]


async def test_a_failing_job_and_its_pods(kube_api: KubeApi, tmp_path: Path) -> None:
    kube_api.create("nodes", {"metadata": {"name": "gpu-1"}, "spec": {}})
    kube_api.create(
        JOBS,
        {
            "metadata": {"name": "train", "namespace": "ml"},
            "spec": {"backoffLimit": 1, "template": {}},
            "status": {"active": 1, "startTime": "2026-01-01T00:00:05Z"},
        },
    )
    sink = RecordingSink()
    w = watcher(kube_api, tmp_path, sink)
    await w.poll_once()
    kube_api.finish_pod("ml", "train-a", {"job-name": "train"}, "gpu-1", 1, "crash 1")
    patch(kube_api, f"{JOBS}/train", {"status": {"failed": 1, "active": 1}})
    await w.poll_once()
    kube_api.finish_pod("ml", "train-b", {"job-name": "train"}, "gpu-1", 137, "crash 2")
    kube_api.finish_pod("ml", "other", {"job-name": "unrelated"}, "gpu-9", 0, "")
    failed = {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}
    patch(kube_api, f"{JOBS}/train", {"status": {"failed": 2, "active": 0, "conditions": [failed]}})
    await w.poll_once()
    assert summary(sink.events, "k8s/ml/train") == [
        ("JobSubmitted", None, 1),
        ("JobStateChanged", JobState.RUNNING, 1),
        ("JobExited", JobState.PREEMPTED, 1),  # the attempt the Job controller retried
        ("JobStateChanged", JobState.RUNNING, 2),
        ("JobStateChanged", JobState.FAILED, 2),
        ("JobExited", JobState.FAILED, 2),
    ]
    end = next(e for e in sink.of_type(JobExited) if e.payload.attempt == 2)
    assert (end.payload.exit_code, end.payload.nodes) == (137, ("gpu-1",))
    assert end.payload.reason == "BackoffLimitExceeded"

    again = RecordingSink()
    await watcher(kube_api, tmp_path, again).poll_once()
    assert again.events == []


async def test_pytorchjob_succeeds_on_its_nodes(kube_api: KubeApi, tmp_path: Path) -> None:
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "llama", "namespace": "ml"},
        "status": {"conditions": [{"type": "Created", "status": "True"}]},
    }
    kube_api.create(PYTORCHJOBS, job)
    sink = RecordingSink()
    w = watcher(kube_api, tmp_path, sink)
    await w.poll_once()
    labels = {"training.kubeflow.org/job-name": "llama"}
    kube_api.finish_pod("ml", "llama-master-0", labels, "gpu-1", 0, "Training Complete")
    kube_api.finish_pod("ml", "llama-worker-0", labels, "gpu-2", 0, "")
    conditions = [
        {"type": "Created", "status": "True"},
        {"type": "Running", "status": "False"},
        {"type": "Succeeded", "status": "True", "reason": "PyTorchJobSucceeded"},
    ]
    patch(kube_api, f"{PYTORCHJOBS}/llama", {"status": {"conditions": conditions}})
    await w.poll_once()
    assert summary(sink.events, "k8s/ml/llama") == [
        ("JobSubmitted", None, 1),
        ("JobStateChanged", JobState.PENDING, 1),
        ("JobStateChanged", JobState.SUCCEEDED, 1),
        ("JobExited", JobState.SUCCEEDED, 1),
    ]
    [end] = sink.of_type(JobExited)
    assert (end.payload.exit_code, end.payload.nodes) == (0, ("gpu-1", "gpu-2"))


async def test_cordoned_and_not_ready_nodes(kube_api: KubeApi, tmp_path: Path) -> None:
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    kube_api.create("nodes", {"metadata": {"name": "gpu-3"}, "spec": {}, "status": ready})
    sink = RecordingSink()
    w = watcher(kube_api, tmp_path, sink)
    await w.poll_once()
    patch(kube_api, "api/v1/nodes/gpu-3", {"spec": {"unschedulable": True}})
    await w.poll_once()
    not_ready = {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]}
    patch(kube_api, "api/v1/nodes/gpu-3", {"status": not_ready})
    await w.poll_once()
    await w.poll_once()
    got = [(e.payload.status, e.payload.message) for e in sink.of_type(NodeHealthChecked)]
    assert got == [
        (HealthStatus.OK, "ready"),
        (HealthStatus.WARN, "cordoned"),
        (HealthStatus.CRITICAL, "not ready: KubeletDown"),
    ]
