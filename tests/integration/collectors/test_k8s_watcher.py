"""The Kubernetes watcher against a real kube-apiserver (tests/support/kube_api.py), with the
token of the project's own `centrality-watcher` ServiceAccount: what it reports, and how it
watches. No controller runs: the tests write the Jobs' and pods' status as the Job controller
and the kubelet would."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from collectors.sink import RecordingSink
from collectors.watchers.k8s.settings import K8sWatchSettings
from collectors.watchers.k8s.watcher import K8sWatcher
from schemas.envelope import Event
from schemas.events import JobExited, JobSubmitted, NodeFactsObserved, NodeHealthChecked
from schemas.events.jobs import JobState
from schemas.events.nodes import HealthStatus
from tests.support.kube_api import KubeApiServer
from tests.support.kube_rbac import WATCHER, KubeWorkers
from tests.support.relay import Relay

pytestmark = pytest.mark.integration

BATCH = "apis/batch/v1"


@pytest.fixture
def ns(kube_api: KubeApiServer, unique: str) -> str:
    return kube_api.namespace(f"w{unique}")


@asynccontextmanager
async def watching(
    kube_workers: KubeWorkers,
    ns: str,
    tmp_path: Path,
    sink: RecordingSink,
    kubeconfig: Path | None = None,
    **settings: Any,
) -> AsyncIterator[K8sWatcher]:
    options: dict[str, Any] = {"settle_s": 0.1, "retry_s": 0.2, "backoff_max_s": 0.5}
    options |= settings
    w = K8sWatcher(
        K8sWatchSettings(
            kubeconfig=kubeconfig or kube_workers.watcher,
            namespace=ns,
            cluster="k1",
            state_file=tmp_path / "ledger.json",
            **options,
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


async def until(check: Callable[[], bool], what: str, timeout_s: float = 15) -> None:
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


def make_job(kube_api: KubeApiServer, ns: str, name: str, backoff_limit: int = 6) -> None:
    kube_api.create(
        f"{BATCH}/namespaces/{ns}/jobs",
        {
            "metadata": {"name": name},
            "spec": {
                "backoffLimit": backoff_limit,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "run", "image": "trainer:1"}],
                    }
                },
            },
        },
    )


def job_status(kube_api: KubeApiServer, ns: str, name: str, status: dict[str, Any]) -> None:
    kube_api.patch(f"{BATCH}/namespaces/{ns}/jobs/{name}/status", {"status": status})


def watches(kube_api: KubeApiServer, kube_workers: KubeWorkers, path: str) -> list[dict[str, str]]:
    """The query of every WATCH the watcher made on `path`, in order (from the audit log)."""
    user = kube_workers.user(WATCHER)
    return [
        {k: v[-1] for k, v in parse_qs(urlsplit(e["requestURI"]).query).items()}
        for e in kube_api.audit("ResponseStarted")
        if e["user"]["username"] == user
        and e["verb"] == "watch"
        and urlsplit(e["requestURI"]).path == f"/{path}"
    ]


def lists(kube_api: KubeApiServer, kube_workers: KubeWorkers, path: str) -> int:
    user = kube_workers.user(WATCHER)
    return sum(
        1
        for e in kube_api.audit()
        if e["user"]["username"] == user
        and e["verb"] == "list"
        and urlsplit(e["requestURI"]).path == f"/{path}"
    )


async def test_a_failing_job_and_its_pods(
    kube_api: KubeApiServer, kube_workers: KubeWorkers, ns: str, tmp_path: Path
) -> None:
    make_job(kube_api, ns, "train", backoff_limit=1)
    start = {"active": 1, "startTime": "2026-01-01T00:00:05Z"}
    job_status(kube_api, ns, "train", start)
    sink = RecordingSink()
    job = f"k8s/{ns}/train"
    node = f"gpu-{ns}"
    async with watching(kube_workers, ns, tmp_path, sink):
        await until(lambda: len(summary(sink.events, job)) == 2, "the job seen running")
        kube_api.finish_pod(ns, "train-a", {"job-name": "train"}, node, 1)
        job_status(kube_api, ns, "train", {"failed": 1, "active": 1})
        await until(lambda: len(summary(sink.events, job)) == 4, "the retry seen")
        kube_api.finish_pod(ns, "train-b", {"job-name": "train"}, node, 137)
        kube_api.finish_pod(ns, "other", {"job-name": "unrelated"}, "gpu-9", 0)
        failed = {
            "status": "True",
            "reason": "BackoffLimitExceeded",
            "message": "Job has reached the specified backoff limit",
        }
        job_status(
            kube_api,
            ns,
            "train",
            {
                "failed": 2,
                "active": 0,
                "conditions": [{"type": "FailureTarget", **failed}, {"type": "Failed", **failed}],
            },
        )
        await until(lambda: len(sink.of_type(JobExited)) == 2, "the job's end")
    assert summary(sink.events, job) == [
        ("JobSubmitted", None, 1),
        ("JobStateChanged", JobState.RUNNING, 1),
        ("JobExited", JobState.FAILED, 1),  # a pod failure the Job controller retried
        ("JobStateChanged", JobState.RUNNING, 2),
        ("JobStateChanged", JobState.FAILED, 2),
        ("JobExited", JobState.FAILED, 2),
    ]
    first, last = sink.of_type(JobExited)
    assert (first.payload.exit_code, first.payload.nodes) == (1, (node,))
    assert (last.payload.exit_code, last.payload.nodes) == (137, (node,))
    assert last.payload.reason == "BackoffLimitExceeded: Error"  # the Job's word, the pod's

    again = RecordingSink()
    async with watching(kube_workers, ns, tmp_path, again) as w:
        await until(lambda: w.idle, "the restarted watcher in step")
    assert again.events == []


async def test_a_restart_resumes_from_its_ledger(
    kube_api: KubeApiServer, kube_workers: KubeWorkers, ns: str, tmp_path: Path
) -> None:
    make_job(kube_api, ns, "train")
    job_status(kube_api, ns, "train", {"active": 1, "startTime": "2026-01-01T00:00:05Z"})
    job = f"k8s/{ns}/train"
    before = RecordingSink()
    async with watching(kube_workers, ns, tmp_path, before):
        await until(lambda: len(summary(before.events, job)) == 2, "the job seen running")
    # While the watcher is away the job ends; the restarted one says only that.
    kube_api.finish_pod(ns, "train-a", {"job-name": "train"}, f"gpu-{ns}", 0)
    done = {
        "status": "True",
        "reason": "CompletionsReached",
        "message": "Reached expected number of succeeded pods",
    }
    job_status(
        kube_api,
        ns,
        "train",
        {
            "active": 0,
            "succeeded": 1,
            "completionTime": "2026-01-01T00:09:00Z",
            "conditions": [{"type": "SuccessCriteriaMet", **done}, {"type": "Complete", **done}],
        },
    )
    after = RecordingSink()
    async with watching(kube_workers, ns, tmp_path, after):
        await until(lambda: bool(after.of_type(JobExited)), "the job's end")
    assert summary(after.events, job) == [
        ("JobStateChanged", JobState.SUCCEEDED, 1),
        ("JobExited", JobState.SUCCEEDED, 1),
    ]


async def test_pytorchjob_succeeds_on_its_nodes(
    kube_api: KubeApiServer, kube_workers: KubeWorkers, ns: str, tmp_path: Path
) -> None:
    replica = {
        "replicas": 1,
        "restartPolicy": "OnFailure",
        "template": {"spec": {"containers": [{"name": "pytorch", "image": "trainer:1"}]}},
    }
    torch = f"apis/kubeflow.org/v1/namespaces/{ns}/pytorchjobs"
    kube_api.create(
        torch,
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "llama"},
            "spec": {"pytorchReplicaSpecs": {"Master": replica, "Worker": replica}},
        },
    )
    created = {"type": "Created", "status": "True", "reason": "PyTorchJobCreated"}
    kube_api.patch(f"{torch}/llama/status", {"status": {"conditions": [created]}})
    sink = RecordingSink()
    job = f"k8s/{ns}/llama"
    async with watching(kube_workers, ns, tmp_path, sink):
        await until(lambda: len(summary(sink.events, job)) == 2, "the job seen")
        labels = {"training.kubeflow.org/job-name": "llama"}
        kube_api.finish_pod(ns, "llama-master-0", labels, f"gpu-1-{ns}", 0)
        kube_api.finish_pod(ns, "llama-worker-0", labels, f"gpu-2-{ns}", 0)
        conditions = [
            created,
            {"type": "Running", "status": "False", "reason": "PyTorchJobRunning"},
            {"type": "Succeeded", "status": "True", "reason": "PyTorchJobSucceeded"},
        ]
        kube_api.patch(f"{torch}/llama/status", {"status": {"conditions": conditions}})
        await until(lambda: bool(sink.of_type(JobExited)), "the job's end")
    assert summary(sink.events, job) == [
        ("JobSubmitted", None, 1),
        ("JobStateChanged", JobState.PENDING, 1),
        ("JobStateChanged", JobState.SUCCEEDED, 1),
        ("JobExited", JobState.SUCCEEDED, 1),
    ]
    [end] = sink.of_type(JobExited)
    assert (end.payload.exit_code, end.payload.nodes) == (0, (f"gpu-1-{ns}", f"gpu-2-{ns}"))


async def test_a_jobset_restarted_once_then_completed_and_its_child_jobs_are_parts(
    kube_api: KubeApiServer, kube_workers: KubeWorkers, ns: str, tmp_path: Path
) -> None:
    jobsets = f"apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets"
    template = {
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "w", "image": "trainer:1"}],
                }
            }
        }
    }
    made = kube_api.create(
        jobsets,
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "llm"},
            "spec": {"replicatedJobs": [{"name": "workers", "replicas": 1, "template": template}]},
        },
    )
    # The JobSet controller's child Job: part of the JobSet, never a job of its own.
    owner = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "name": "llm",
        "uid": made["metadata"]["uid"],
        "controller": True,
    }
    kube_api.create(
        f"{BATCH}/namespaces/{ns}/jobs",
        {
            "metadata": {"name": "llm-workers-0", "ownerReferences": [owner]},
            "spec": template["spec"],
        },
    )
    running = {
        "name": "workers",
        "ready": 1,
        "succeeded": 0,
        "failed": 0,
        "active": 1,
        "suspended": 0,
    }

    def status(**fields: Any) -> None:
        kube_api.patch(
            f"{jobsets}/llm/status", {"status": {"replicatedJobsStatus": [running], **fields}}
        )

    def pod(name: str, node: str, attempt: int, code: int) -> None:
        labels = {
            "jobset.sigs.k8s.io/jobset-name": "llm",
            "job-name": "llm-workers-0",
            "jobset.sigs.k8s.io/restart-attempt": str(attempt),
        }
        kube_api.finish_pod(ns, name, labels, node, code)

    status(restarts=0)
    sink = RecordingSink()
    job = f"k8s/{ns}/llm"
    first, second = f"gpu-1-{ns}", f"gpu-2-{ns}"
    async with watching(kube_workers, ns, tmp_path, sink) as w:
        await until(lambda: len(summary(sink.events, job)) == 2, "the JobSet seen running")
        pod("llm-workers-0-a", first, 0, 1)
        await until(lambda: w.ledger.entries[job]["nodes"] == [first], "where it ran, noted")
        status(restarts=1, restartsCountTowardsMax=1)
        await until(lambda: len(summary(sink.events, job)) == 4, "the restart seen")
        pod("llm-workers-0-b", second, 1, 0)
        done = {
            "type": "Completed",
            "status": "True",
            "reason": "AllJobsCompleted",
            "message": "jobset completed successfully",
            "lastTransitionTime": "2026-01-01T00:09:00Z",
        }
        status(restarts=1, restartsCountTowardsMax=1, terminalState="Completed", conditions=[done])
        await until(lambda: len(sink.of_type(JobExited)) == 2, "the JobSet's end")
    assert summary(sink.events, job) == [
        ("JobSubmitted", None, 1),
        ("JobStateChanged", JobState.RUNNING, 1),
        ("JobExited", JobState.FAILED, 1),
        ("JobStateChanged", JobState.RUNNING, 2),
        ("JobStateChanged", JobState.SUCCEEDED, 2),
        ("JobExited", JobState.SUCCEEDED, 2),
    ]
    restarted, end = sink.of_type(JobExited)
    assert restarted.payload.nodes == (first,) and end.payload.nodes == (second,)
    assert not [e for e in sink.events if e.subject == f"k8s/{ns}/llm-workers-0"]


async def test_a_rayjob_on_its_ray_cluster(
    kube_api: KubeApiServer, kube_workers: KubeWorkers, ns: str, tmp_path: Path
) -> None:
    rayjobs = f"apis/ray.io/v1/namespaces/{ns}/rayjobs"
    made = kube_api.create(
        rayjobs,
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": {"name": "tune"},
            "spec": {"entrypoint": "python tune.py"},
        },
    )
    # KubeRay's submitter Job carries the RayJob's name: part of it, not a second job.
    owner = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "name": "tune",
        "uid": made["metadata"]["uid"],
        "controller": True,
    }
    kube_api.create(
        f"{BATCH}/namespaces/{ns}/jobs",
        {
            "metadata": {"name": "tune", "ownerReferences": [owner]},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "s", "image": "ray:2"}],
                    }
                }
            },
        },
    )
    cluster = "tune-raycluster-x2k9p"

    def status(**fields: Any) -> None:
        kube_api.patch(f"{rayjobs}/tune/status", {"status": {"rayClusterName": cluster, **fields}})

    status(jobDeploymentStatus="Initializing")
    sink = RecordingSink()
    job = f"k8s/{ns}/tune"
    head, worker = f"gpu-1-{ns}", f"gpu-2-{ns}"
    async with watching(kube_workers, ns, tmp_path, sink):
        await until(lambda: len(summary(sink.events, job)) == 2, "the RayJob seen")
        for name, node in (("tune-head", head), ("tune-worker", worker)):
            kube_api.finish_pod(ns, name, {"ray.io/cluster": cluster}, node, 0)
        status(jobDeploymentStatus="Running", jobStatus="RUNNING", jobId="tune-7b4sx")
        await until(lambda: len(summary(sink.events, job)) == 3, "the Ray job running")
        status(jobDeploymentStatus="Complete", jobStatus="SUCCEEDED", succeeded=1, failed=0)
        await until(lambda: bool(sink.of_type(JobExited)), "the RayJob's end")
    assert summary(sink.events, job) == [
        ("JobSubmitted", None, 1),
        ("JobStateChanged", JobState.PENDING, 1),
        ("JobStateChanged", JobState.RUNNING, 1),
        ("JobStateChanged", JobState.SUCCEEDED, 1),
        ("JobExited", JobState.SUCCEEDED, 1),
    ]
    [end] = sink.of_type(JobExited)
    assert end.payload.nodes == (head, worker)
    assert [e.payload.raw["kind"] for e in sink.of_type(JobSubmitted)] == ["RayJob"]


async def test_cordoned_and_not_ready_nodes(
    kube_api: KubeApiServer, kube_workers: KubeWorkers, ns: str, tmp_path: Path
) -> None:
    node = f"gpu-3-{ns}"
    product = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}  # GPU feature discovery's
    kube_api.create("api/v1/nodes", {"metadata": {"name": node, "labels": product}})
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady"}
    kube_api.patch(f"api/v1/nodes/{node}/status", {"status": {"conditions": [ready]}})
    sink = RecordingSink()

    def seen() -> list[tuple[HealthStatus, str]]:
        return [
            (e.payload.status, e.payload.message)
            for e in sink.of_type(NodeHealthChecked)
            if e.subject == node
        ]

    async with watching(kube_workers, ns, tmp_path, sink):
        await until(lambda: len(seen()) == 1, "the node seen")
        kube_api.patch(f"api/v1/nodes/{node}", {"spec": {"unschedulable": True}})
        await until(lambda: len(seen()) == 2, "the cordon seen")
        down = {"type": "Ready", "status": "False", "reason": "KubeletDown"}
        kube_api.patch(f"api/v1/nodes/{node}/status", {"status": {"conditions": [down]}})
        await until(lambda: len(seen()) == 3, "the node going down seen")
        kube_api.patch(f"api/v1/nodes/{node}", {"metadata": {"labels": {"unrelated": "x"}}})
        await asyncio.sleep(0.3)
    assert seen() == [
        (HealthStatus.OK, "ready"),
        (HealthStatus.WARN, "cordoned"),
        (HealthStatus.CRITICAL, "not ready: KubeletDown"),
    ]
    # Its labels are facts, told when first seen and when they change (node groups).
    labels = [e.payload.labels for e in sink.of_type(NodeFactsObserved) if e.subject == node]
    assert labels == [product, {**product, "unrelated": "x"}]


TOPOGRAPH_LEAF = "network.topology.nvidia.com/leaf"  # the default CENTRALITY_K8S_WATCH_SWITCH_LABEL


@pytest.mark.parametrize("label", [TOPOGRAPH_LEAF, "fabric.topograph.run/tier-0"])
async def test_a_nodes_leaf_switch_is_a_fact_from_its_topology_label(
    kube_api: KubeApiServer, kube_workers: KubeWorkers, ns: str, tmp_path: Path, label: str
) -> None:
    other = next(o for o in (TOPOGRAPH_LEAF, "fabric.topograph.run/tier-0") if o != label)
    cabled, unlabelled = f"gpu-5-{ns}", f"gpu-6-{ns}"
    kube_api.create("api/v1/nodes", {"metadata": {"name": cabled, "labels": {label: "s12"}}})
    kube_api.create("api/v1/nodes", {"metadata": {"name": unlabelled, "labels": {other: "s9"}}})
    sink = RecordingSink()

    def switches(node: str) -> list[str | None]:
        return [e.payload.switch for e in sink.of_type(NodeFactsObserved) if e.subject == node]

    settings = {} if label == TOPOGRAPH_LEAF else {"switch_label": label}
    async with watching(kube_workers, ns, tmp_path, sink, **settings):
        await until(lambda: bool(switches(cabled) and switches(unlabelled)), "the nodes seen")
        kube_api.patch(f"api/v1/nodes/{cabled}", {"metadata": {"labels": {label: "s13"}}})
        await until(lambda: len(switches(cabled)) == 2, "the node recabled")
    # Told when first seen and when it changes, as its other facts; no label, no switch.
    assert switches(cabled) == ["s12", "s13"]
    assert switches(unlabelled) == [None]


async def test_it_lists_in_pages_once_then_watches_from_the_resource_version(
    kube_api: KubeApiServer, kube_workers: KubeWorkers, ns: str, tmp_path: Path
) -> None:
    for i in range(25):
        kube_api.create(f"api/v1/namespaces/{ns}/pods", _pod(f"web-{i}"))
    pods = f"api/v1/namespaces/{ns}/pods"
    sink = RecordingSink()
    # Watches the server ends every few seconds are resumed where they were, never relisted.
    async with watching(kube_workers, ns, tmp_path, sink, timeout_s=3, page_size=10) as w:
        await until(lambda: w.idle, "the first sync")
        assert len(w.objects["pods"]) == 25
        kube_api.create(pods, _pod("late"))
        await until(lambda: len(w.objects["pods"]) == 26, "the late pod seen on the watch")
        await until(lambda: len(watches(kube_api, kube_workers, pods)) >= 2, "a watch resumed", 20)
    assert lists(kube_api, kube_workers, pods) == 3  # 25 pods in pages of 10
    resumed = watches(kube_api, kube_workers, pods)
    versions = [int(q["resourceVersion"]) for q in resumed]
    assert versions == sorted(versions) and all(v > 0 for v in versions)
    assert all(q["allowWatchBookmarks"].lower() == "true" for q in resumed)
    assert all(q["timeoutSeconds"] == "3" for q in resumed)


async def test_bookmarks_carry_the_resource_version_past_other_peoples_changes(
    kube_api: KubeApiServer, kube_workers: KubeWorkers, ns: str, unique: str, tmp_path: Path
) -> None:
    """Nothing changes in the watched namespace while pods change elsewhere: the API server's
    bookmarks move the watcher's resourceVersion on, so its next watch starts from there."""
    elsewhere = kube_api.namespace(f"e{unique}")
    pods = f"api/v1/namespaces/{ns}/pods"
    sink = RecordingSink()
    async with watching(kube_workers, ns, tmp_path, sink, timeout_s=3):
        await until(lambda: len(watches(kube_api, kube_workers, pods)) >= 1, "the first watch")
        first = int(watches(kube_api, kube_workers, pods)[0]["resourceVersion"])
        for i in range(3):
            kube_api.create(f"api/v1/namespaces/{elsewhere}/pods", _pod(f"noise-{i}"))

        def moved_on() -> bool:
            return any(
                int(q["resourceVersion"]) > first for q in watches(kube_api, kube_workers, pods)
            )

        await until(moved_on, "a watch resumed from a bookmark's resourceVersion", 20)
    assert not [e for e in sink.events if e.subject.startswith(f"k8s/{ns}/")]


async def test_410_gone_lists_again_without_losing_or_repeating_a_job_event(
    kube_api: KubeApiServer, kube_workers: KubeWorkers, ns: str, tmp_path: Path
) -> None:
    make_job(kube_api, ns, "old")
    done = {"status": "True", "reason": "CompletionsReached", "message": "done"}
    job_status(
        kube_api,
        ns,
        "old",
        {
            "succeeded": 1,
            "startTime": "2026-01-01T00:00:05Z",
            "completionTime": "2026-01-01T00:09:00Z",
            "conditions": [{"type": "SuccessCriteriaMet", **done}, {"type": "Complete", **done}],
        },
    )
    jobs = f"{BATCH}/namespaces/{ns}/jobs"
    port = int(kube_api.url.rsplit(":", 1)[1])
    sink = RecordingSink()
    with Relay(("127.0.0.1", port)) as relay:
        server = f"https://127.0.0.1:{relay.port}"
        cut = kube_api.kubeconfig(tmp_path / "relayed", kube_workers.tokens[WATCHER], server)
        async with watching(kube_workers, ns, tmp_path, sink, kubeconfig=cut) as w:
            await until(lambda: len(sink.of_type(JobExited)) == 1, "the old job's end")
            # Behind a partition, with etcd compacted meanwhile: what happened is only known
            # by listing again. The old job is gone, a new one came.
            relay.hold()
            kube_api.delete(f"{jobs}/old")
            make_job(kube_api, ns, "new")
            kube_api.compact()
            relay.sever()
            await until(
                lambda: any(e.subject == f"k8s/{ns}/new" for e in sink.of_type(JobSubmitted)),
                "the new job, learned from the second list",
            )
            await until(lambda: f"k8s/{ns}/old" not in w.ledger.entries, "the old job forgotten")
    assert summary(sink.events, f"k8s/{ns}/old") == [
        ("JobSubmitted", None, 1),
        ("JobStateChanged", JobState.SUCCEEDED, 1),
        ("JobExited", JobState.SUCCEEDED, 1),
    ]
    assert summary(sink.events, f"k8s/{ns}/new") == [
        ("JobSubmitted", None, 1),
        ("JobStateChanged", JobState.PENDING, 1),
    ]
    assert lists(kube_api, kube_workers, jobs) == 2
    # The pods' watch resumed from the API server's watch cache: no second list.
    assert lists(kube_api, kube_workers, f"api/v1/namespaces/{ns}/pods") == 1


def _pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
