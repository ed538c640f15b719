"""Kubernetes through its API: cordon/taint by PATCH on nodes, evictions, Jobs.

- drain = cordon (`spec.unschedulable`) + evict the node's pods (eviction subresource, so
  PodDisruptionBudgets hold; a refusal is temporary); the reason is the node annotation
  `centrality.io/drain-reason`.
- taint = a `NoSchedule` taint `<key>=true` (the reason in `centrality.io/taint-reason`).
- requeue `k8s/<ns>/<name>`: a batch Job or a Kubeflow PyTorchJob of that name is deleted and
  created again without its status, every container's env `CENTRALITY_RESUME_FROM` set to the
  checkpoint, `centrality.io/requeues` counting the requeues.
- run_on_nodes: one Job per node, bound by `nodeName` (runs on cordoned, tainted nodes), in
  the project's image, requesting the node's GPUs.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes import client

from actions.adapters.base import RunResult, adapter
from actions.adapters.jobids import parse_job_id
from actions.adapters.kubernetes_api import api_client, call, not_found
from actions.adapters.kubernetes_specs import (
    RunPod,
    evictable,
    recreated,
    run_job,
    with_taint,
    without_taint,
)
from actions.adapters.settings import KubernetesSettings
from actions.errors import PermanentError, TemporaryError

DRAIN_REASON = "centrality.io/drain-reason"
TAINT_REASON = "centrality.io/taint-reason"
_PYTORCH = ("kubeflow.org", "v1", "pytorchjobs")


@adapter("kubernetes")
class KubernetesAdapter:
    name = "kubernetes"

    def __init__(self, settings: KubernetesSettings | None = None) -> None:
        self.settings = settings or KubernetesSettings()
        self.api = api_client(self.settings)
        self.core = client.CoreV1Api(self.api)
        self.batch = client.BatchV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)

    def requeue(self, job_id: str, *, checkpoint_uri: str | None) -> dict[str, Any]:
        ns, name = parse_job_id(job_id, "k8s", 2)
        job = not_found(self.batch.read_namespaced_job, name, ns)
        if job is not None:
            new = recreated(self.api.sanitize_for_serialization(job), checkpoint_uri)
            call(
                "delete job",
                self.batch.delete_namespaced_job,
                name,
                ns,
                propagation_policy="Background",
            )
            call("create job", self.batch.create_namespaced_job, ns, new)
            kind = "Job"
        else:
            torch = not_found(
                self.custom.get_namespaced_custom_object, *_PYTORCH[:2], ns, _PYTORCH[2], name
            )
            if torch is None:
                raise PermanentError(f"no Job or PyTorchJob {ns}/{name}")
            new = recreated(torch, checkpoint_uri)
            call(
                "delete pytorchjob",
                self.custom.delete_namespaced_custom_object,
                *_PYTORCH[:2],
                ns,
                _PYTORCH[2],
                name,
                propagation_policy="Background",
            )
            call(
                "create pytorchjob",
                self.custom.create_namespaced_custom_object,
                *_PYTORCH[:2],
                ns,
                _PYTORCH[2],
                new,
            )
            kind = "PyTorchJob"
        return {
            "scheduler": self.name,
            "job_id": job_id,
            "kind": kind,
            "checkpoint_uri": checkpoint_uri,
            "action": "recreated",
        }

    def cancel(self, job_id: str, *, reason: str) -> dict[str, Any]:
        ns, name = parse_job_id(job_id, "k8s", 2)
        if not_found(self.batch.read_namespaced_job, name, ns) is None:
            return {"scheduler": self.name, "job_id": job_id, "action": "already gone"}
        call(
            "delete job",
            self.batch.delete_namespaced_job,
            name,
            ns,
            propagation_policy="Background",
        )
        return {"scheduler": self.name, "job_id": job_id, "action": "deleted", "reason": reason}

    def release(self, job_id: str) -> dict[str, Any]:
        # A held Kubernetes Job is a suspended one (`spec.suspend: true`).
        ns, name = parse_job_id(job_id, "k8s", 2)
        call("resume job", self.batch.patch_namespaced_job, name, ns, {"spec": {"suspend": False}})
        return {"scheduler": self.name, "job_id": job_id, "action": "unsuspended"}

    def drain(self, nodes: Sequence[str], *, reason: str) -> dict[str, Any]:
        for node in nodes:
            self._patch_node(
                node,
                {
                    "spec": {"unschedulable": True},
                    "metadata": {"annotations": {DRAIN_REASON: reason}},
                },
            )
        evicted = self._evict(nodes)
        return {
            "scheduler": self.name,
            "drained": list(nodes),
            "reason": reason,
            "evicted": evicted,
        }

    def resume(self, nodes: Sequence[str]) -> dict[str, Any]:
        for node in nodes:
            self._patch_node(
                node,
                {
                    "spec": {"unschedulable": False},
                    "metadata": {"annotations": {DRAIN_REASON: None}},
                },
            )
        return {"scheduler": self.name, "resumed": list(nodes)}

    def taint(self, nodes: Sequence[str], *, key: str, reason: str) -> dict[str, Any]:
        for node in nodes:
            taints = with_taint(self._taints(node), key)
            self._patch_node(
                node,
                {"spec": {"taints": taints}, "metadata": {"annotations": {TAINT_REASON: reason}}},
            )
        return {"scheduler": self.name, "tainted": list(nodes), "key": key}

    def untaint(self, nodes: Sequence[str], *, key: str) -> dict[str, Any]:
        for node in nodes:
            self._patch_node(node, {"spec": {"taints": without_taint(self._taints(node), key)}})
        return {"scheduler": self.name, "untainted": list(nodes), "key": key}

    def run_on_nodes(
        self,
        nodes: Sequence[str],
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        timeout_s: float,
    ) -> RunResult:
        ns, run = self.settings.namespace, f"centrality-run-{uuid.uuid4().hex[:8]}"
        names = [f"{run}-{i}" for i in range(len(nodes))]
        for name, node in zip(names, nodes, strict=True):
            body = run_job(name, node, command, dict(env), self._run_pod(node), timeout_s)
            call("create job", self.batch.create_namespaced_job, ns, body)
        deadline = time.monotonic() + timeout_s
        pending = set(names)
        while pending:
            for name in sorted(pending):
                status = call("read job", self.batch.read_namespaced_job_status, name, ns).status
                if status is not None and (status.succeeded or status.failed):
                    pending.discard(name)
            if pending and time.monotonic() >= deadline:
                for name in names:
                    not_found(
                        self.batch.delete_namespaced_job, name, ns, propagation_policy="Background"
                    )
                raise TemporaryError(f"{len(pending)} of {len(names)} run Jobs still running")
            if pending:
                time.sleep(self.settings.poll_interval_s)
        outputs = [self._pod_output(ns, "centrality.io/run", name) for name in names]
        return RunResult(
            exit_code=next((code for code, _ in outputs if code != 0), 0),
            stdout="".join(log for _, log in outputs),
            job_id=f"k8s/{ns}/{run}",
        )

    def job_logs(self, job_id: str, *, tail_lines: int = 200) -> str:
        ns, name = parse_job_id(job_id, "k8s", 2)
        for label in ("batch.kubernetes.io/job-name", "job-name", "training.kubeflow.org/job-name"):
            pods = self._pods(ns, label, name)
            if pods:
                return str(
                    call(
                        "read log",
                        self.core.read_namespaced_pod_log,
                        pods[-1].metadata.name,
                        ns,
                        tail_lines=tail_lines,
                    )
                )
        raise PermanentError(f"no pods of {job_id}")

    def _run_pod(self, node: str) -> RunPod:
        s = self.settings
        gpus = s.run_gpus
        if gpus is None:
            status = call(f"read node {node}", self.core.read_node, node).status
            allocatable = (status.allocatable if status is not None else None) or {}
            gpus = int(allocatable.get(s.gpu_resource, 0))
        return RunPod(s.run_image, gpus, s.gpu_resource, s.run_cpu, s.run_memory)

    def _patch_node(self, node: str, body: dict[str, Any]) -> None:
        call(f"patch node {node}", self.core.patch_node, node, body)

    def _taints(self, node: str) -> list[dict[str, Any]]:
        spec = call(f"read node {node}", self.core.read_node, node).spec
        taints = (spec.taints if spec is not None else None) or []
        return [self.api.sanitize_for_serialization(t) for t in taints]

    def _evict(self, nodes: Sequence[str]) -> list[str]:
        evicted = []
        for node in nodes:
            pods = call(
                "list pods",
                self.core.list_pod_for_all_namespaces,
                field_selector=f"spec.nodeName={node}",
            ).items
            for pod in pods:
                if not evictable(self.api.sanitize_for_serialization(pod), node):
                    continue
                meta = pod.metadata
                body = client.V1Eviction(
                    api_version="policy/v1",
                    kind="Eviction",
                    metadata=client.V1ObjectMeta(name=meta.name, namespace=meta.namespace),
                )
                call(
                    f"evict {meta.namespace}/{meta.name}",
                    self.core.create_namespaced_pod_eviction,
                    meta.name,
                    meta.namespace,
                    body,
                )
                evicted.append(f"{meta.namespace}/{meta.name}")
        return evicted

    def _pods(self, ns: str, label: str, value: str) -> list[Any]:
        pods = call(
            "list pods", self.core.list_namespaced_pod, ns, label_selector=f"{label}={value}"
        ).items
        # Filtered here too: the selector is only a hint to servers that ignore it.
        mine = [p for p in pods if (p.metadata.labels or {}).get(label) == value]
        return sorted(mine, key=lambda p: p.metadata.creation_timestamp or 0)

    def _pod_output(self, ns: str, label: str, value: str) -> tuple[int, str]:
        pods = self._pods(ns, label, value)
        if not pods:
            return 1, ""
        pod = pods[-1]
        log = call("read log", self.core.read_namespaced_pod_log, pod.metadata.name, ns)
        states = (pod.status.container_statuses if pod.status else None) or []
        terminated = [s.state.terminated for s in states if s.state and s.state.terminated]
        return (terminated[0].exit_code if terminated else 1), str(log)
