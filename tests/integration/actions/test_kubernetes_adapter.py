"""The Kubernetes adapter against a test API server (kmock): what the server receives."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from actions.adapters.kubernetes import KubernetesAdapter
from actions.adapters.settings import KubernetesSettings, project_image
from actions.errors import PermanentError, TemporaryError
from tests.support.kube import KubeApi

pytestmark = pytest.mark.integration

JOBS = "apis/batch/v1/namespaces/ml/jobs"
TORCH = "apis/kubeflow.org/v1/namespaces/ml/pytorchjobs"
GPU = "nvidia.com/gpu"


def _adapter(api: KubeApi) -> KubernetesAdapter:
    return KubernetesAdapter(
        KubernetesSettings(host=api.url, namespace="bench", poll_interval_s=0.05)
    )


def _node(api: KubeApi, name: str, taints: list[dict[str, Any]] | None = None) -> None:
    api.create(
        "nodes",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name},
            "spec": {"taints": taints or []},
        },
    )


def _pod(api: KubeApi, ns: str, name: str, node: str, owner: str = "Job") -> None:
    api.create(
        f"api/v1/namespaces/{ns}/pods",
        {
            "metadata": {
                "name": name,
                "namespace": ns,
                "ownerReferences": [{"apiVersion": "v1", "kind": owner, "name": "o", "uid": "u1"}],
            },
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]},
        },
    )


def test_drain_cordons_with_a_reason_and_evicts_the_nodes_pods(kube: KubeApi) -> None:
    _node(kube, "gpu-1")
    _node(kube, "gpu-2")
    _pod(kube, "ml", "train-0", "gpu-1")
    _pod(kube, "ml", "other-0", "gpu-2")
    _pod(kube, "kube-system", "dcgm-exporter-x", "gpu-1", owner="DaemonSet")

    detail = _adapter(kube).drain(["gpu-1"], reason="5 failures in 1h")

    assert detail["evicted"] == ["ml/train-0"]
    assert kube.requests("PATCH", "/api/v1/nodes/gpu-1") == [
        {
            "spec": {"unschedulable": True},
            "metadata": {"annotations": {"centrality.io/drain-reason": "5 failures in 1h"}},
        }
    ]
    assert kube.requests("POST", "/api/v1/namespaces/ml/pods/train-0/eviction") == [
        {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": "train-0", "namespace": "ml"},
        }
    ]
    assert kube.get("api/v1/namespaces/ml/pods/train-0") is None
    assert kube.get("api/v1/namespaces/ml/pods/other-0") is not None
    assert kube.get("api/v1/namespaces/kube-system/pods/dcgm-exporter-x") is not None
    assert kube.requests("PATCH", "/api/v1/nodes/gpu-2") == []

    _adapter(kube).resume(["gpu-1"])
    node = kube.get("api/v1/nodes/gpu-1")
    assert node is not None and node["spec"]["unschedulable"] is False


def test_taint_adds_one_noschedule_taint_and_untaint_keeps_the_others(kube: KubeApi) -> None:
    other = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    _node(kube, "gpu-1", taints=[other])
    adapter = _adapter(kube)

    adapter.taint(["gpu-1"], key="centrality.io/quarantined", reason="xid 79")
    adapter.taint(["gpu-1"], key="centrality.io/quarantined", reason="xid 79 again")
    adapter.untaint(["gpu-1"], key="centrality.io/quarantined")

    patches = [p["spec"]["taints"] for p in kube.requests("PATCH", "/api/v1/nodes/gpu-1")]
    mine = {"key": "centrality.io/quarantined", "value": "true", "effect": "NoSchedule"}
    assert patches == [[other, mine], [other, mine], [other]]


def test_requeue_recreates_the_job_with_the_checkpoint(kube: KubeApi) -> None:
    labels = {"controller-uid": "u-1", "batch.kubernetes.io/job-name": "train", "team": "nlp"}
    kube.create(
        JOBS,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "train",
                "namespace": "ml",
                "uid": "u-1",
                "resourceVersion": "41",
                "annotations": {"owner": "nlp"},
            },
            "spec": {
                "selector": {"matchLabels": {"controller-uid": "u-1"}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "trainer",
                                "image": "trainer:1",
                                "env": [
                                    {"name": "CENTRALITY_RESUME_FROM", "value": "s3://old"},
                                    {"name": "EPOCHS", "value": "9"},
                                ],
                            }
                        ],
                    },
                },
            },
            "status": {"failed": 1},
        },
    )

    detail = _adapter(kube).requeue("k8s/ml/train", checkpoint_uri="s3://ckpt/step-900")

    assert detail["kind"] == "Job"
    assert len(kube.requests("DELETE", f"/{JOBS}/train")) == 1
    created = kube.requests("POST", f"/{JOBS}")[-1]
    assert "status" not in created and "selector" not in created["spec"]
    assert "uid" not in created["metadata"] and "resourceVersion" not in created["metadata"]
    assert created["metadata"]["annotations"] == {"owner": "nlp", "centrality.io/requeues": "1"}
    assert created["spec"]["template"]["metadata"]["labels"] == {"team": "nlp"}
    assert created["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "EPOCHS", "value": "9"},
        {"name": "CENTRALITY_RESUME_FROM", "value": "s3://ckpt/step-900"},
    ]
    assert kube.get(f"{JOBS}/train") == created


def test_requeue_recreates_a_pytorchjob_on_every_replica(kube: KubeApi) -> None:
    replica = {
        "replicas": 1,
        "template": {"spec": {"containers": [{"name": "pytorch", "image": "t:1"}]}},
    }
    kube.create(
        TORCH,
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "llm", "namespace": "ml"},
            "spec": {"pytorchReplicaSpecs": {"Master": replica, "Worker": replica}},
            "status": {"conditions": [{"type": "Failed", "status": "True"}]},
        },
    )

    assert _adapter(kube).requeue("k8s/ml/llm", checkpoint_uri="gs://c/9")["kind"] == "PyTorchJob"

    created = kube.requests("POST", f"/{TORCH}")[-1]
    assert "status" not in created
    for role in ("Master", "Worker"):
        template = created["spec"]["pytorchReplicaSpecs"][role]["template"]
        assert template["spec"]["containers"][0]["env"] == [
            {"name": "CENTRALITY_RESUME_FROM", "value": "gs://c/9"}
        ]


@pytest.mark.parametrize("job_id", ["k8s/ml/missing", "slurm/c/1", "k8s/only-ns"])
def test_unknown_or_foreign_jobs_are_permanent(kube: KubeApi, job_id: str) -> None:
    with pytest.raises(PermanentError):
        _adapter(kube).requeue(job_id, checkpoint_uri=None)


def test_an_unreachable_api_server_is_temporary(kube: KubeApi) -> None:
    adapter = KubernetesAdapter(KubernetesSettings(host="http://127.0.0.1:9"))
    with pytest.raises(TemporaryError):
        adapter.drain(["gpu-1"], reason="x")


def test_run_on_nodes_binds_one_job_per_node_and_collects_output(kube: KubeApi) -> None:
    for node, gpus in (("gpu-1", "8"), ("gpu-2", "4")):
        kube.create("nodes", {"metadata": {"name": node}, "status": {"allocatable": {GPU: gpus}}})
    adapter = _adapter(kube)
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(
            adapter.run_on_nodes,
            ["gpu-1", "gpu-2"],
            ["python", "-m", "bench"],
            env={"SUITES": "gpu"},
            timeout_s=20,
        )
        jobs = _wait_for_jobs(kube, "bench", 2)
        for job in jobs:  # the kubelet's part
            name, node = job["metadata"]["name"], job["spec"]["template"]["spec"]["nodeName"]
            kube.finish_pod(
                "bench",
                f"{name}-x",
                {"centrality.io/run": name},
                node,
                exit_code=0,
                log=f"ran on {node}\n",
            )
            requests.patch(
                f"{kube.url}/apis/batch/v1/namespaces/bench/jobs/{name}/status",
                json={"status": {"succeeded": 1}},
                timeout=5,
                headers={"Content-Type": "application/merge-patch+json"},
            )
        result = running.result(timeout=20)

    pod_specs = [j["spec"]["template"]["spec"] for j in jobs]
    assert sorted(s["nodeName"] for s in pod_specs) == ["gpu-1", "gpu-2"]
    assert all(s["tolerations"] == [{"operator": "Exists"}] for s in pod_specs)
    assert all(s["containers"][0]["command"] == ["python", "-m", "bench"] for s in pod_specs)
    assert all(s["containers"][0]["env"] == [{"name": "SUITES", "value": "gpu"}] for s in pod_specs)
    # The project's image, and every GPU the node allocates (the benchmark measures them all).
    assert all(s["containers"][0]["image"] == project_image() for s in pod_specs)
    gpus = {s["nodeName"]: s["containers"][0]["resources"]["limits"][GPU] for s in pod_specs}
    assert gpus == {"gpu-1": "8", "gpu-2": "4"}
    assert result.exit_code == 0
    assert sorted(result.stdout.splitlines()) == ["ran on gpu-1", "ran on gpu-2"]


def test_job_logs_reads_the_jobs_pod(kube: KubeApi) -> None:
    kube.finish_pod("ml", "train-abc", {"job-name": "train"}, "gpu-1", 1, "a\nb\nc\n")
    assert _adapter(kube).job_logs("k8s/ml/train", tail_lines=2) == "b\nc\n"


def _wait_for_jobs(kube: KubeApi, ns: str, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        listed = kube.get(f"apis/batch/v1/namespaces/{ns}/jobs") or {"items": []}
        if len(listed["items"]) >= count:
            return list(listed["items"])
        time.sleep(0.05)
    raise AssertionError(f"{count} jobs never appeared in {ns}")
