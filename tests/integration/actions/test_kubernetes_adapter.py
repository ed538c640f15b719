"""The Kubernetes adapter against a real kube-apiserver (tests/support/kube_api.py), with the
token of the project's own `centrality-actions` ServiceAccount: what lands in the cluster.

No controller runs: the tests write what the Job and disruption controllers and the kubelet
would (pod status, a PodDisruptionBudget's status, a Job's conditions)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from actions.adapters.kubernetes import DRAIN_REASON, TAINT_REASON, KubernetesAdapter
from actions.adapters.settings import KubernetesSettings, project_image
from actions.errors import PermanentError, TemporaryError
from centrality.slack_fake import SlackFake
from schemas.events import ActionFailed, ActionSucceeded, QuarantineNodes
from schemas.runtime.settings import KafkaSettings
from tests.factories import exited
from tests.support.action_worker import count, send, wait_for, worker
from tests.support.kube_api import KubeApiServer
from tests.support.kube_rbac import ACTIONS, KubeWorkers

pytestmark = pytest.mark.integration

GPU = "nvidia.com/gpu"
QUARANTINE = "centrality.io/quarantined"


@pytest.fixture
def ns(kube_api: KubeApiServer, unique: str) -> str:
    return kube_api.namespace(f"a{unique}")


@pytest.fixture
def adapter(kube_workers: KubeWorkers, ns: str) -> KubernetesAdapter:
    return make_adapter(kube_workers, ns)


def make_adapter(kube_workers: KubeWorkers, ns: str, **settings: Any) -> KubernetesAdapter:
    options: dict[str, Any] = {"poll_interval_s": 0.05, "eviction_backoff_s": 0.1}
    return KubernetesAdapter(
        KubernetesSettings(kubeconfig=kube_workers.actions, namespace=ns, **options | settings)
    )


def pod(
    kube_api: KubeApiServer, ns: str, name: str, node: str, owner: str = "Job", **labels: str
) -> None:
    """A running, ready pod on `node`, as the kubelet reports it."""
    api = "apps/v1" if owner == "DaemonSet" else "batch/v1"
    kube_api.create(
        f"api/v1/namespaces/{ns}/pods",
        {
            "metadata": {
                "name": name,
                "labels": labels,
                "ownerReferences": [
                    {
                        "apiVersion": api,
                        "kind": owner,
                        "name": "o",
                        "uid": "u-1",
                        "controller": True,
                    }
                ],
            },
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "trainer:1"}]},
        },
    )
    ready = {"type": "Ready", "status": "True"}
    kube_api.patch(
        f"api/v1/namespaces/{ns}/pods/{name}/status",
        {"status": {"phase": "Running", "conditions": [ready]}},
    )


def budget(kube_api: KubeApiServer, ns: str, allowed: int) -> None:
    """The disruption controller's part: how many of the training pods may go now."""
    path = f"apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/train-pdb"
    generation = (kube_api.get(path) or {})["metadata"]["generation"]
    kube_api.patch(
        f"{path}/status",
        {
            "status": {
                "observedGeneration": generation,
                "disruptionsAllowed": allowed,
                "currentHealthy": 1,
                "desiredHealthy": 1 - allowed,
                "expectedPods": 1,
            }
        },
    )


@pytest.fixture
def guarded(kube_api: KubeApiServer, ns: str) -> Iterator[str]:
    """A node running one training pod that a PodDisruptionBudget keeps (minAvailable 1)."""
    node = f"gpu-{ns}"
    kube_api.node(node)
    pod(kube_api, ns, "train-0", node, app="train")
    kube_api.create(
        f"apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
        {
            "metadata": {"name": "train-pdb"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "train"}}},
        },
    )
    budget(kube_api, ns, allowed=0)
    yield node
    kube_api.delete(f"api/v1/nodes/{node}")


def requests_of(
    kube_api: KubeApiServer, kube_workers: KubeWorkers, verb: str, path: str
) -> list[int]:
    """The status codes of the action worker's `verb` requests on `path` (audit log)."""
    user = kube_workers.user(ACTIONS)
    return [
        int(e["responseStatus"]["code"])
        for e in kube_api.audit()
        if e["user"]["username"] == user
        and e["verb"] == verb
        and e["requestURI"].split("?")[0] == f"/{path}"
    ]


def test_cordon_taint_untaint_uncordon(
    kube_api: KubeApiServer, adapter: KubernetesAdapter, ns: str
) -> None:
    node = f"gpu-{ns}"
    kube_api.node(node)
    other = {"key": GPU, "value": "present", "effect": "NoSchedule"}
    kube_api.patch(f"api/v1/nodes/{node}", {"spec": {"taints": [other]}})

    adapter.drain([node], reason="5 failures in 1h")
    cordoned = kube_api.get(f"api/v1/nodes/{node}") or {}
    assert cordoned["spec"]["unschedulable"] is True
    assert cordoned["metadata"]["annotations"][DRAIN_REASON] == "5 failures in 1h"

    adapter.taint([node], key=QUARANTINE, reason="xid 79")
    adapter.taint([node], key=QUARANTINE, reason="xid 79 again")  # once is enough
    mine = {"key": QUARANTINE, "value": "true", "effect": "NoSchedule"}
    tainted = kube_api.get(f"api/v1/nodes/{node}") or {}
    assert tainted["spec"]["taints"] == [other, mine]
    assert tainted["metadata"]["annotations"][TAINT_REASON] == "xid 79 again"

    adapter.untaint([node], key=QUARANTINE)
    adapter.resume([node])
    after = kube_api.get(f"api/v1/nodes/{node}") or {}
    assert after["spec"]["taints"] == [other]
    assert not after["spec"].get("unschedulable")
    assert DRAIN_REASON not in after["metadata"].get("annotations", {})
    assert TAINT_REASON not in after["metadata"].get("annotations", {})


def test_drain_evicts_the_nodes_pods_through_the_eviction_api(
    kube_api: KubeApiServer, kube_workers: KubeWorkers, adapter: KubernetesAdapter, ns: str
) -> None:
    node, elsewhere = f"gpu-1-{ns}", f"gpu-2-{ns}"
    kube_api.node(node)
    kube_api.node(elsewhere)
    pod(kube_api, ns, "train-0", node)
    pod(kube_api, ns, "other-0", elsewhere)
    pod(kube_api, ns, "dcgm-exporter-x", node, owner="DaemonSet")

    detail = adapter.drain([node], reason="xid 79")

    assert (detail["evicted"], detail["refused"]) == ([f"{ns}/train-0"], {})
    # Evicted: the API server deletes it gracefully (the kubelet would stop it).
    evicted = kube_api.get(f"api/v1/namespaces/{ns}/pods/train-0") or {}
    assert evicted["metadata"].get("deletionTimestamp")
    for kept in ("other-0", "dcgm-exporter-x"):
        assert not (kube_api.get(f"api/v1/namespaces/{ns}/pods/{kept}") or {})["metadata"].get(
            "deletionTimestamp"
        )
    assert requests_of(
        kube_api, kube_workers, "create", f"api/v1/namespaces/{ns}/pods/train-0/eviction"
    ) == [201]


def test_a_refusing_budget_is_asked_again_and_reported_never_deleted_instead(
    kube_api: KubeApiServer,
    kube_workers: KubeWorkers,
    adapter: KubernetesAdapter,
    ns: str,
    guarded: str,
) -> None:
    eviction = f"api/v1/namespaces/{ns}/pods/train-0/eviction"
    with ThreadPoolExecutor(1) as pool:
        draining = pool.submit(adapter.drain, [guarded], reason="xid 79")
        deadline = time.monotonic() + 20
        while requests_of(kube_api, kube_workers, "create", eviction).count(429) < 2:
            assert time.monotonic() < deadline, "the eviction was not asked again"
            assert not draining.done(), draining.result()
            time.sleep(0.05)
        budget(kube_api, ns, allowed=1)  # the other replica is back: one may go
        detail = draining.result(timeout=20)

    assert detail["evicted"] == [f"{ns}/train-0"]
    [(who, why)] = detail["refused"].items()
    assert who == f"{ns}/train-0" and "train-pdb" in why
    codes = requests_of(kube_api, kube_workers, "create", eviction)
    assert codes[-1] == 201 and set(codes[:-1]) == {429}
    assert (
        requests_of(kube_api, kube_workers, "delete", f"api/v1/namespaces/{ns}/pods/train-0") == []
    )


def test_a_drain_past_its_time_limit_fails_naming_the_budget(
    kube_api: KubeApiServer, kube_workers: KubeWorkers, ns: str, guarded: str
) -> None:
    adapter = make_adapter(kube_workers, ns, drain_timeout_s=1.0)
    with pytest.raises(PermanentError, match="train-pdb") as failed:
        adapter.drain([guarded], reason="xid 79")
    assert f"{ns}/train-0" in str(failed.value)
    still = kube_api.get(f"api/v1/namespaces/{ns}/pods/train-0") or {}
    assert not still["metadata"].get("deletionTimestamp")
    assert (kube_api.get(f"api/v1/nodes/{guarded}") or {})["spec"]["unschedulable"] is True


async def test_the_action_worker_reports_the_blocked_drain_as_action_failed(
    kube_api: KubeApiServer,
    kube_workers: KubeWorkers,
    kafka_settings: KafkaSettings,
    slack: SlackFake,
    ns: str,
    guarded: str,
) -> None:
    cluster = f"k{ns}"
    cause = exited(subject=f"k8s/{ns}/train").model_copy(update={"cluster": cluster})
    quarantine = QuarantineNodes.decide(
        cause=cause, source="test", rule="fatal_xid", window="q1",
        reason="xid 79", nodes=(guarded,),
    )  # fmt: skip
    adapter = make_adapter(kube_workers, ns, drain_timeout_s=1.0)
    async with worker(
        kafka_settings, adapter, slack, fleet_size={cluster: 1}, quarantine_max_share=1.0
    ):
        await send(kafka_settings, quarantine)
        seen = await wait_for(kafka_settings, lambda s: count(s, ActionFailed, quarantine) == 1)
    [failed] = [e for e in seen if isinstance(e, ActionFailed)]
    assert failed.payload.permanent and "train-pdb" in failed.payload.error
    assert count(seen, ActionSucceeded, quarantine) == 0


def test_requeue_recreates_the_job_with_the_checkpoint(
    kube_api: KubeApiServer, adapter: KubernetesAdapter, ns: str
) -> None:
    jobs = f"apis/batch/v1/namespaces/{ns}/jobs"
    old = kube_api.create(
        jobs,
        {
            "metadata": {"name": "train", "annotations": {"owner": "nlp"}},
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "metadata": {"labels": {"team": "nlp"}},
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
        },
    )

    detail = adapter.requeue(f"k8s/{ns}/train", checkpoint_uri="s3://ckpt/step-900")

    assert detail["kind"] == "Job"
    new = kube_api.get(f"{jobs}/train") or {}
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["metadata"]["annotations"] == {"owner": "nlp", "centrality.io/requeues": "1"}
    # The API server gave the new Job its own selector and controller labels.
    labels = new["spec"]["template"]["metadata"]["labels"]
    assert labels["team"] == "nlp" and labels["controller-uid"] == new["metadata"]["uid"]
    assert new["spec"]["template"]["spec"]["containers"][0]["env"] == [
        {"name": "EPOCHS", "value": "9"},
        {"name": "CENTRALITY_RESUME_FROM", "value": "s3://ckpt/step-900"},
    ]
    assert not new.get("status", {}).get("failed")


def test_requeue_recreates_a_pytorchjob_on_every_replica(
    kube_api: KubeApiServer, adapter: KubernetesAdapter, ns: str
) -> None:
    replica = {
        "replicas": 1,
        "template": {"spec": {"containers": [{"name": "pytorch", "image": "t:1"}]}},
    }
    torch = f"apis/kubeflow.org/v1/namespaces/{ns}/pytorchjobs"
    kube_api.create(
        torch,
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "llm"},
            "spec": {"pytorchReplicaSpecs": {"Master": replica, "Worker": replica}},
        },
    )
    failed = {"type": "Failed", "status": "True", "reason": "PyTorchJobFailed"}
    kube_api.patch(f"{torch}/llm/status", {"status": {"conditions": [failed]}})

    assert adapter.requeue(f"k8s/{ns}/llm", checkpoint_uri="gs://c/9")["kind"] == "PyTorchJob"

    created = kube_api.get(f"{torch}/llm") or {}
    assert "status" not in created
    for role in ("Master", "Worker"):
        template = created["spec"]["pytorchReplicaSpecs"][role]["template"]
        assert template["spec"]["containers"][0]["env"] == [
            {"name": "CENTRALITY_RESUME_FROM", "value": "gs://c/9"}
        ]


def test_cancel_deletes_the_job_and_release_unsuspends_it(
    kube_api: KubeApiServer, adapter: KubernetesAdapter, ns: str
) -> None:
    jobs = f"apis/batch/v1/namespaces/{ns}/jobs"
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}
    for name in ("held", "doomed"):
        kube_api.create(
            jobs, {"metadata": {"name": name}, "spec": {"suspend": True, "template": template}}
        )

    assert adapter.release(f"k8s/{ns}/held")["action"] == "unsuspended"
    assert (kube_api.get(f"{jobs}/held") or {})["spec"]["suspend"] is False
    assert adapter.cancel(f"k8s/{ns}/doomed", reason="by hand")["action"] == "deleted"
    assert kube_api.get(f"{jobs}/doomed") is None
    assert adapter.cancel(f"k8s/{ns}/doomed", reason="again")["action"] == "already gone"


@pytest.mark.parametrize("job_id", ["missing", "slurm/c/1", "k8s/only-ns"])
def test_unknown_or_foreign_jobs_are_permanent(
    adapter: KubernetesAdapter, ns: str, job_id: str
) -> None:
    with pytest.raises(PermanentError):
        adapter.requeue(
            f"k8s/{ns}/{job_id}" if job_id == "missing" else job_id, checkpoint_uri=None
        )


def test_an_unreachable_api_server_is_temporary() -> None:
    adapter = KubernetesAdapter(KubernetesSettings(host="http://127.0.0.1:9"))
    with pytest.raises(TemporaryError):
        adapter.drain(["gpu-1"], reason="x")


def test_run_on_nodes_binds_one_job_per_node_and_collects_output(
    kube_api: KubeApiServer, adapter: KubernetesAdapter, ns: str
) -> None:
    nodes = {f"gpu-1-{ns}": 8, f"gpu-2-{ns}": 4}
    for node, gpus in nodes.items():
        kube_api.node(node, gpus=gpus)
    jobs = f"apis/batch/v1/namespaces/{ns}/jobs"
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(
            adapter.run_on_nodes,
            list(nodes),
            ["python", "-m", "bench"],
            env={"SUITES": "gpu"},
            timeout_s=20,
        )
        made = _wait_for_jobs(kube_api, jobs, 2)
        for job in made:  # the Job controller's and the kubelet's part
            name, node = job["metadata"]["name"], job["spec"]["template"]["spec"]["nodeName"]
            run = {"centrality.io/run": name}
            kube_api.finish_pod(ns, f"{name}-x", run, node, 0, log=f"ran on {node}\n")
            done = {"status": "True", "reason": "CompletionsReached", "message": "done"}
            kube_api.patch(
                f"{jobs}/{name}/status",
                {
                    "status": {
                        "succeeded": 1,
                        "startTime": "2026-01-01T00:00:00Z",
                        "completionTime": "2026-01-01T00:01:00Z",
                        "conditions": [
                            {"type": "SuccessCriteriaMet", **done},
                            {"type": "Complete", **done},
                        ],
                    }
                },
            )
        result = running.result(timeout=20)

    pod_specs = [j["spec"]["template"]["spec"] for j in made]
    assert sorted(s["nodeName"] for s in pod_specs) == sorted(nodes)
    assert all(s["tolerations"] == [{"operator": "Exists"}] for s in pod_specs)
    assert all(s["containers"][0]["command"] == ["python", "-m", "bench"] for s in pod_specs)
    assert all(s["containers"][0]["env"] == [{"name": "SUITES", "value": "gpu"}] for s in pod_specs)
    # The project's image, and every GPU the node allocates (the benchmark measures them all).
    assert all(s["containers"][0]["image"] == project_image() for s in pod_specs)
    gpus = {s["nodeName"]: s["containers"][0]["resources"]["limits"][GPU] for s in pod_specs}
    assert gpus == {node: str(n) for node, n in nodes.items()}
    assert result.exit_code == 0
    assert sorted(result.stdout.splitlines()) == sorted(f"ran on {node}" for node in nodes)


def test_run_on_nodes_ends_when_a_deadline_fails_the_job(
    kube_api: KubeApiServer, adapter: KubernetesAdapter, ns: str
) -> None:
    """A Job its deadline failed has no failed pod to count: its condition says it is over."""
    node = f"gpu-{ns}"
    kube_api.node(node, gpus=1)
    jobs = f"apis/batch/v1/namespaces/{ns}/jobs"
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(adapter.run_on_nodes, [node], ["sleep", "1d"], env={}, timeout_s=20)
        [job] = _wait_for_jobs(kube_api, jobs, 1)
        name = job["metadata"]["name"]
        kube_api.finish_pod(ns, f"{name}-x", {"centrality.io/run": name}, node, 137, log="slow\n")
        late = {
            "status": "True",
            "reason": "DeadlineExceeded",
            "message": "Job was active longer than specified deadline",
        }
        kube_api.patch(
            f"{jobs}/{name}/status",
            {
                "status": {
                    "startTime": "2026-01-01T00:00:00Z",
                    "conditions": [{"type": "FailureTarget", **late}, {"type": "Failed", **late}],
                }
            },
        )
        result = running.result(timeout=20)
    assert (result.exit_code, result.stdout) == (137, "slow\n")


def test_job_logs_reads_the_jobs_latest_pod(
    kube_api: KubeApiServer, adapter: KubernetesAdapter, ns: str
) -> None:
    node = f"gpu-{ns}"
    kube_api.node(node)
    labels = {"batch.kubernetes.io/job-name": "train"}
    kube_api.finish_pod(ns, "train-abc", labels, node, 1, log="a\nb\nc\n")
    assert adapter.job_logs(f"k8s/{ns}/train", tail_lines=2) == "b\nc\n"


def _wait_for_jobs(kube_api: KubeApiServer, path: str, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        listed = kube_api.get(path) or {"items": []}
        if len(listed["items"]) >= count:
            return list(listed["items"])
        time.sleep(0.05)
    raise AssertionError(f"{count} jobs never appeared in {path}")
