"""Kubernetes through its API: cordon/taint by PATCH on nodes, evictions, Jobs.

- drain = cordon (`spec.unschedulable`) + evict the node's pods through the Eviction API, so
  PodDisruptionBudgets hold. A refusal (429) is temporary: asked again with backoff until
  `drain_timeout_s`, reported in the result; past it the drain fails naming the budget, and
  the nodes stay cordoned. A pod is never deleted instead. The reason is the node annotation
  `centrality.io/drain-reason`.
- taint = a `NoSchedule` taint `<key>=true` (the reason in `centrality.io/taint-reason`),
  written over the taints it read at their resourceVersion (a change made meanwhile is a
  conflict, 409, temporary: never overwritten).
- requeue `k8s/<ns>/<name>`: a batch Job or a Kubeflow PyTorchJob of that name is deleted and
  created again without its status, every container's env `CENTRALITY_RESUME_FROM` set to the
  checkpoint, `centrality.io/requeues` counting the requeues.
- signal: refused (PermanentError). The API sends a container's processes a signal only by
  deleting its pod (its stop signal, then SIGKILL), which ends the job; exec into a pod is not
  ours to do. A job on Kubernetes checkpoints at its own cadence.
- run_on_nodes: one Job per node, bound by `nodeName` (runs on cordoned, tainted nodes), in
  the project's image, requesting the node's GPUs.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from actions.adapters.base import RunResult, adapter
from actions.adapters.jobids import parse_job_id
from actions.adapters.kubernetes_api import api_client, call, classified, not_found, refusal
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

log = structlog.get_logger(__name__)

DRAIN_REASON = "centrality.io/drain-reason"
TAINT_REASON = "centrality.io/taint-reason"
_PYTORCH = ("kubeflow.org", "v1", "pytorchjobs")
_EVICTION_BACKOFF_MAX_S = 15.0


@adapter("kubernetes")
class KubernetesAdapter:
    name = "kubernetes"

    def __init__(self, settings: KubernetesSettings | None = None) -> None:
        self.settings = settings or KubernetesSettings()
        self.api = api_client(self.settings)
        self.core = client.CoreV1Api(self.api)
        self.batch = client.BatchV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)

    def requeue(
        self, job_id: str, *, checkpoint_uri: str | None, exclude: Sequence[str] = ()
    ) -> dict[str, Any]:
        ns, name = parse_job_id(job_id, "k8s", 2)
        job = not_found(self.batch.read_namespaced_job, name, ns)
        if job is not None:
            new = recreated(self.api.sanitize_for_serialization(job), checkpoint_uri, exclude)
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
            new = recreated(torch, checkpoint_uri, exclude)
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
            "excluded": sorted(exclude),
        }

    def reboot(self, nodes: Sequence[str], *, reason: str) -> dict[str, Any]:
        # Built for Slurm only; see docs/remediation.md for what a cluster of Kubernetes can use.
        raise PermanentError(
            "the Kubernetes adapter does not reboot nodes (docs/remediation.md): escalate instead"
        )

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

    def signal(self, job_id: str, *, signal: str) -> dict[str, Any]:
        raise PermanentError(
            f"Kubernetes cannot send {signal} to the processes of {job_id} (only deleting its "
            "pods signals them, which ends them): let the job checkpoint at its own cadence"
        )

    def drain(self, nodes: Sequence[str], *, reason: str) -> dict[str, Any]:
        for node in nodes:
            self._patch_node(
                node,
                {
                    "spec": {"unschedulable": True},
                    "metadata": {"annotations": {DRAIN_REASON: reason}},
                },
            )
        evicted, refused = self._evict(nodes)
        return {
            "scheduler": self.name,
            "drained": list(nodes),
            "reason": reason,
            "evicted": evicted,
            "refused": refused,
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
            taints, version = self._taints(node)
            self._patch_node(
                node,
                {
                    "spec": {"taints": with_taint(taints, key)},
                    "metadata": {"annotations": {TAINT_REASON: reason}, "resourceVersion": version},
                },
            )
        return {"scheduler": self.name, "tainted": list(nodes), "key": key}

    def untaint(self, nodes: Sequence[str], *, key: str) -> dict[str, Any]:
        for node in nodes:
            taints, version = self._taints(node)
            self._patch_node(
                node,
                {
                    "spec": {"taints": without_taint(taints, key)},
                    "metadata": {"annotations": {TAINT_REASON: None}, "resourceVersion": version},
                },
            )
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
                # Over when the controller says so (Complete or Failed, a deadline's too); its
                # counters move before, and a failure it retries is not the end.
                ended = {
                    c.type
                    for c in (status.conditions if status else None) or []
                    if c.status == "True"
                } & {"Complete", "Failed"}
                if ended:
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

    def _taints(self, node: str) -> tuple[list[dict[str, Any]], str]:
        """The node's taints and the resourceVersion they were read at."""
        read = call(f"read node {node}", self.core.read_node, node)
        taints = (read.spec.taints if read.spec is not None else None) or []
        dicts = [self.api.sanitize_for_serialization(t) for t in taints]
        return dicts, read.metadata.resource_version

    def _evict(self, nodes: Sequence[str]) -> tuple[list[str], dict[str, str]]:
        """Evict every evictable pod of `nodes`, asking again while budgets refuse; returns the
        pods evicted and, for those refused on the way, how often and why."""
        waiting = [
            (pod.metadata.namespace, pod.metadata.name)
            for node in nodes
            for pod in call(
                "list pods",
                self.core.list_pod_for_all_namespaces,
                field_selector=f"spec.nodeName={node}",
            ).items
            if evictable(self.api.sanitize_for_serialization(pod), node)
        ]
        deadline = time.monotonic() + self.settings.drain_timeout_s
        evicted: list[str] = []
        refusals: dict[str, tuple[int, str]] = {}
        pause = self.settings.eviction_backoff_s
        while True:
            still = []
            for ns, name in waiting:
                why = self._evict_pod(ns, name)
                if why is None:
                    evicted.append(f"{ns}/{name}")
                    continue
                still.append((ns, name))
                count, _ = refusals.get(f"{ns}/{name}", (0, ""))
                refusals[f"{ns}/{name}"] = (count + 1, why)
                log.info("eviction_refused", pod=f"{ns}/{name}", why=why)
            waiting = still
            if not waiting:
                return evicted, {pod: f"{why} (refused {n}x)" for pod, (n, why) in refusals.items()}
            left = deadline - time.monotonic()
            if left <= 0:
                blocked = "; ".join(
                    f"{ns}/{name}: {refusals[f'{ns}/{name}'][1]}" for ns, name in waiting
                )
                raise PermanentError(
                    f"drain of {', '.join(nodes)} not finished in "
                    f"{self.settings.drain_timeout_s:g}s, evictions refused: {blocked} "
                    f"({len(evicted)} evicted; the nodes stay cordoned)"
                )
            time.sleep(min(left, pause * random.uniform(0.5, 1.0)))
            pause = min(pause * 2, _EVICTION_BACKOFF_MAX_S)

    def _evict_pod(self, ns: str, name: str) -> str | None:
        """Ask the Eviction API; None when the pod is evicted (or already gone), else why the
        API server refused for now (a PodDisruptionBudget)."""
        body = client.V1Eviction(
            api_version="policy/v1",
            kind="Eviction",
            metadata=client.V1ObjectMeta(name=name, namespace=ns),
        )
        try:
            self.core.create_namespaced_pod_eviction(name, ns, body)
        except ApiException as exc:
            if exc.status == 429:
                return refusal(exc)
            if exc.status == 404:
                return None
            with classified(f"evict {ns}/{name}"):
                raise
        return None

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
