"""Least privilege, proven on a real API server: the watcher and the action worker's adapter,
run with tokens minted for the ServiceAccounts of `infra/k8s` and bound by its ClusterRoles,
do everything they do, and the audit log shows each was refused nothing (a verb missing from
a ClusterRole fails here) and was granted nothing it did not use (an extra one is named)."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from actions.adapters.kubernetes import KubernetesAdapter
from actions.adapters.settings import KubernetesSettings
from actions.errors import TemporaryError
from collectors.sink import RecordingSink
from collectors.watchers.k8s.settings import K8sWatchSettings
from collectors.watchers.k8s.watcher import KINDS, K8sWatcher
from tests.support.kube_api import KubeApiServer
from tests.support.kube_rbac import ACTIONS, WATCHER, KubeWorkers, asked, granted

pytestmark = pytest.mark.integration

TEMPLATE = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}


def test_each_worker_is_granted_exactly_what_it_uses(
    kube_api: KubeApiServer, kube_workers: KubeWorkers, unique: str, tmp_path: Path
) -> None:
    ns = kube_api.namespace(f"r{unique}")
    node = f"gpu-{ns}"
    kube_api.node(node, gpus=1)
    asyncio.run(_watch_everything(kube_workers, tmp_path))
    _act_in_every_way(kube_api, kube_workers, ns, node)

    audit = kube_api.audit() + kube_api.audit("ResponseStarted")  # watches: when they began
    for account in (WATCHER, ACTIONS):
        used = asked(audit, kube_workers.user(account))
        refused = sorted(grant for grant, codes in used.items() if 403 in codes)
        assert not refused, f"{account} was refused {refused}: its ClusterRole lacks them"
        unused = sorted(granted(kube_workers.roles[account]) - set(used))
        assert not unused, f"the ClusterRole {account} grants what it never uses: {unused}"


async def _watch_everything(kube_workers: KubeWorkers, tmp_path: Path) -> None:
    """The watcher as deployed: every namespace, every kind listed, then watched."""
    settings = K8sWatchSettings(
        kubeconfig=kube_workers.watcher, state_file=tmp_path / "ledger.json", settle_s=0.05
    )
    watcher = K8sWatcher(settings, RecordingSink())
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    deadline = time.monotonic() + 20
    while watcher.synced != set(KINDS):
        assert time.monotonic() < deadline, f"never listed: {set(KINDS) - watcher.synced}"
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # the watches begin
    stop.set()
    await asyncio.wait_for(task, 5)


def _act_in_every_way(
    kube_api: KubeApiServer, kube_workers: KubeWorkers, ns: str, node: str
) -> None:
    """Every call the adapter makes, once."""
    adapter = KubernetesAdapter(
        KubernetesSettings(kubeconfig=kube_workers.actions, namespace=ns, poll_interval_s=0.05)
    )
    jobs = f"apis/batch/v1/namespaces/{ns}/jobs"
    for name in ("train", "held", "doomed"):
        kube_api.create(jobs, {"metadata": {"name": name}, "spec": {"template": TEMPLATE}})
    replica = {"replicas": 1, "template": {"spec": {"containers": [{"name": "p", "image": "x"}]}}}
    kube_api.create(
        f"apis/kubeflow.org/v1/namespaces/{ns}/pytorchjobs",
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": {"name": "llm"},
            "spec": {"pytorchReplicaSpecs": {"Master": replica}},
        },
    )
    labels = {"batch.kubernetes.io/job-name": "train"}
    kube_api.finish_pod(ns, "train-x", labels, node, 1, log="boom\n")

    assert adapter.job_logs(f"k8s/{ns}/train") == "boom\n"
    adapter.drain([node], reason="rbac")  # evicts train-x
    adapter.taint([node], key="centrality.io/quarantined", reason="rbac")
    adapter.untaint([node], key="centrality.io/quarantined")
    adapter.resume([node])
    adapter.requeue(f"k8s/{ns}/train", checkpoint_uri="s3://c/1")
    adapter.requeue(f"k8s/{ns}/llm", checkpoint_uri="s3://c/1")
    adapter.release(f"k8s/{ns}/held")
    adapter.cancel(f"k8s/{ns}/doomed", reason="rbac")
    with ThreadPoolExecutor(1) as pool, pytest.raises(TemporaryError):
        # Nobody runs the Job: it times out, and is deleted.
        pool.submit(adapter.run_on_nodes, [node], ["true"], env={}, timeout_s=0.3).result(10)
