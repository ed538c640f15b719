"""The Kubernetes watcher, with the official client, against an API server that speaks LIST and
WATCH over real HTTP (tests/support/kube_watch.py): what it reports, and how it watches."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from collectors.sink import RecordingSink
from collectors.watchers.k8s.settings import K8sWatchSettings
from collectors.watchers.k8s.watcher import K8sWatcher
from schemas.envelope import Event
from schemas.events import JobExited, JobSubmitted, NodeHealthChecked
from schemas.events.jobs import JobState
from schemas.events.nodes import HealthStatus
from tests.support.kube_watch import WatchApi

pytestmark = pytest.mark.integration

PODS, NODES = "/api/v1/pods", "/api/v1/nodes"
JOBS, TORCH = "/apis/batch/v1/jobs", "/apis/kubeflow.org/v1/pytorchjobs"


@asynccontextmanager
async def watching(
    api: WatchApi, tmp_path: Path, sink: RecordingSink, **settings: Any
) -> AsyncIterator[K8sWatcher]:
    options: dict[str, Any] = {"settle_s": 0.05, "retry_s": 0.2, "backoff_max_s": 0.5}
    options |= settings
    w = K8sWatcher(
        K8sWatchSettings(
            host=api.url, cluster="k1", state_file=tmp_path / "ledger.json", **options
        ),
        sink,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(w.run(stop))
    try:
        yield w
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)


async def until(check: Callable[[], bool], what: str, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.02)


def summary(events: list[Event], subject: str) -> list[tuple[str, Any, int]]:
    return [
        (e.type, getattr(e.payload, "state", None), getattr(e.payload, "attempt", 1))
        for e in events
        if e.subject == subject
    ]


def pod(name: str, labels: dict[str, str], node: str, exit_code: int) -> dict[str, Any]:
    """A pod as the kubelet leaves it: it ran on `node` and exited with `exit_code`."""
    return {
        "metadata": {"name": name, "namespace": "ml", "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "run", "image": "x"}]},
        "status": {
            "phase": "Succeeded" if exit_code == 0 else "Failed",
            "containerStatuses": [
                {"name": "run", "state": {"terminated": {"exitCode": exit_code}}}
            ],
        },
    }


async def test_a_failing_job_and_its_pods(watch_api: WatchApi, tmp_path: Path) -> None:
    watch_api.served.discard(TORCH)  # no Kubeflow training operator in this cluster
    watch_api.put(NODES, {"metadata": {"name": "gpu-1"}, "spec": {}})
    watch_api.put(
        JOBS,
        {
            "metadata": {"name": "train", "namespace": "ml"},
            "spec": {"backoffLimit": 1, "template": {}},
            "status": {"active": 1, "startTime": "2026-01-01T00:00:05Z"},
        },
    )
    sink = RecordingSink()
    job = "k8s/ml/train"
    async with watching(watch_api, tmp_path, sink):
        await until(lambda: len(summary(sink.events, job)) == 2, "the job seen running")
        watch_api.put(PODS, pod("train-a", {"job-name": "train"}, "gpu-1", 1))
        watch_api.patch(JOBS, "ml", "train", {"status": {"failed": 1, "active": 1}})
        await until(lambda: len(summary(sink.events, job)) == 4, "the retry seen")
        watch_api.put(PODS, pod("train-b", {"job-name": "train"}, "gpu-1", 137))
        watch_api.put(PODS, pod("other", {"job-name": "unrelated"}, "gpu-9", 0))
        failed = {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}
        status = {"failed": 2, "active": 0, "conditions": [failed]}
        watch_api.patch(JOBS, "ml", "train", {"status": status})
        await until(lambda: len(sink.of_type(JobExited)) == 2, "the job's end")
    assert summary(sink.events, job) == [
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
    async with watching(watch_api, tmp_path, again) as w:
        await until(lambda: w.idle, "the restarted watcher in step")
    assert again.events == []


async def test_pytorchjob_succeeds_on_its_nodes(watch_api: WatchApi, tmp_path: Path) -> None:
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "llama", "namespace": "ml"},
        "status": {"conditions": [{"type": "Created", "status": "True"}]},
    }
    watch_api.put(TORCH, job)
    sink = RecordingSink()
    async with watching(watch_api, tmp_path, sink):
        await until(lambda: len(summary(sink.events, "k8s/ml/llama")) == 2, "the job seen")
        labels = {"training.kubeflow.org/job-name": "llama"}
        watch_api.put(PODS, pod("llama-master-0", labels, "gpu-1", 0))
        watch_api.put(PODS, pod("llama-worker-0", labels, "gpu-2", 0))
        conditions = [
            {"type": "Created", "status": "True"},
            {"type": "Running", "status": "False"},
            {"type": "Succeeded", "status": "True", "reason": "PyTorchJobSucceeded"},
        ]
        watch_api.patch(TORCH, "ml", "llama", {"status": {"conditions": conditions}})
        await until(lambda: bool(sink.of_type(JobExited)), "the job's end")
    assert summary(sink.events, "k8s/ml/llama") == [
        ("JobSubmitted", None, 1),
        ("JobStateChanged", JobState.PENDING, 1),
        ("JobStateChanged", JobState.SUCCEEDED, 1),
        ("JobExited", JobState.SUCCEEDED, 1),
    ]
    [end] = sink.of_type(JobExited)
    assert (end.payload.exit_code, end.payload.nodes) == (0, ("gpu-1", "gpu-2"))


async def test_cordoned_and_not_ready_nodes(watch_api: WatchApi, tmp_path: Path) -> None:
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    watch_api.put(NODES, {"metadata": {"name": "gpu-3"}, "spec": {}, "status": ready})
    sink = RecordingSink()

    def seen() -> list[tuple[HealthStatus, str]]:
        return [(e.payload.status, e.payload.message) for e in sink.of_type(NodeHealthChecked)]

    async with watching(watch_api, tmp_path, sink):
        await until(lambda: len(seen()) == 1, "the node seen")
        watch_api.patch(NODES, "", "gpu-3", {"spec": {"unschedulable": True}})
        await until(lambda: len(seen()) == 2, "the cordon seen")
        not_ready = {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]}
        watch_api.patch(NODES, "", "gpu-3", {"status": not_ready})
        await until(lambda: len(seen()) == 3, "the node going down seen")
        watch_api.patch(NODES, "", "gpu-3", {"metadata": {"labels": {"unrelated": "x"}}})
        await asyncio.sleep(0.3)
    assert seen() == [
        (HealthStatus.OK, "ready"),
        (HealthStatus.WARN, "cordoned"),
        (HealthStatus.CRITICAL, "not ready: KubeletDown"),
    ]


async def test_it_lists_once_in_pages_then_only_watches(
    watch_api: WatchApi, tmp_path: Path
) -> None:
    for i in range(1_100):  # more than one page of 500
        watch_api.put(PODS, {"metadata": {"name": f"web-{i}", "namespace": "web"}})
    sink = RecordingSink()
    # Watches the server ends every second are resumed from where they were, never relisted.
    async with watching(watch_api, tmp_path, sink, timeout_s=1) as w:
        await until(lambda: w.idle, "the first sync")
        for i in range(10):
            watch_api.put(NODES, {"metadata": {"name": f"gpu-{i}"}, "spec": {}})
            await asyncio.sleep(0.25)
        await until(lambda: len(sink.of_type(NodeHealthChecked)) == 10, "every node seen")
        assert len(w.objects["pods"]) == 1_100
    assert watch_api.count(PODS, watch=False) == 3
    for collection in (NODES, JOBS, TORCH):
        assert watch_api.count(collection, watch=False) == 1
    assert watch_api.count(NODES, watch=True) >= 2  # resumed after the server ended one


async def test_410_gone_lists_again_and_reports_what_it_missed(
    watch_api: WatchApi, tmp_path: Path
) -> None:
    done = {"type": "Complete", "status": "True"}
    watch_api.put(
        JOBS,
        {
            "metadata": {"name": "old", "namespace": "ml"},
            "status": {"succeeded": 1, "conditions": [done]},
        },
    )
    sink = RecordingSink()
    async with watching(watch_api, tmp_path, sink) as w:
        await until(lambda: len(sink.of_type(JobExited)) == 1, "the old job's end")
        assert "k8s/ml/old" in w.ledger.entries
        # What happens behind a partition, with the history compacted meanwhile, is only
        # known by listing again: the old job is gone, a new one came.
        watch_api.hold()
        watch_api.delete(JOBS, "ml", "old")
        watch_api.put(
            JOBS, {"metadata": {"name": "new", "namespace": "ml"}, "status": {"active": 1}}
        )
        watch_api.compact()
        watch_api.sever()
        await until(
            lambda: any(e.subject == "k8s/ml/new" for e in sink.of_type(JobSubmitted)),
            "the new job, learned from the second list",
        )
        await until(lambda: "k8s/ml/old" not in w.ledger.entries, "the old job forgotten")
    assert watch_api.count(JOBS, watch=False) == 2
    assert watch_api.count(NODES, watch=False) == 2  # every kind lost its watch and relisted
