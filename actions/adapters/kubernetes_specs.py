"""Pure transformations of Kubernetes objects (plain dicts as the API serves them)."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

RESUME_ENV = "CENTRALITY_RESUME_FROM"
# The image's unprivileged user (the same uid as in infra/k8s).
RUN_UID = 10001
REQUEUES_ANNOTATION = "centrality.io/requeues"
# Set by the API server on create; a recreated object must not carry them.
_SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
)
_JOB_LABELS = (
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "batch.kubernetes.io/job-name",
)


def recreated(
    obj: dict[str, Any], checkpoint_uri: str | None, exclude: Sequence[str] = ()
) -> dict[str, Any]:
    """The same Job/PyTorchJob, fresh, its containers resuming from `checkpoint_uri`, its pods
    kept off the nodes in `exclude` (a required node affinity on their names, added to each
    term the template already has: terms are alternatives, each must avoid them)."""
    new = copy.deepcopy(obj)
    new.pop("status", None)
    meta = new.setdefault("metadata", {})
    for key in _SERVER_METADATA:
        meta.pop(key, None)
    annotations = meta.setdefault("annotations", {}) or {}
    meta["annotations"] = annotations
    annotations[REQUEUES_ANNOTATION] = str(int(annotations.get(REQUEUES_ANNOTATION, "0")) + 1)
    spec = new.get("spec", {})
    if new.get("kind") == "Job":
        # The controller labels and selector of the old Job would match none of the new pods.
        spec.pop("selector", None)
        labels = spec.get("template", {}).get("metadata", {}).get("labels") or {}
        for key in _JOB_LABELS:
            labels.pop(key, None)
    if exclude:
        for template in _templates(new):
            _avoiding(template, exclude)
    for container in _containers(new):
        env = [e for e in container.get("env") or [] if e.get("name") != RESUME_ENV]
        if checkpoint_uri is not None:
            env.append({"name": RESUME_ENV, "value": checkpoint_uri})
        container["env"] = env
    return new


def _templates(obj: dict[str, Any]) -> list[dict[str, Any]]:
    spec = obj.get("spec", {})
    templates = [spec.get("template", {})]
    templates += [r.get("template", {}) for r in (spec.get("pytorchReplicaSpecs") or {}).values()]
    return templates


def _containers(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for template in _templates(obj):
        yield from (template.get("spec") or {}).get("containers") or []


def _avoiding(template: dict[str, Any], nodes: Sequence[str]) -> None:
    spec = template.setdefault("spec", {})
    affinity = spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    avoid = {"key": "metadata.name", "operator": "NotIn", "values": sorted(set(nodes))}
    terms = required.get("nodeSelectorTerms") or [{}]
    required["nodeSelectorTerms"] = [
        {**term, "matchFields": [*(term.get("matchFields") or []), avoid]} for term in terms
    ]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    affinity["nodeAffinity"] = node_affinity
    spec["affinity"] = affinity


def with_taint(taints: Sequence[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    kept = without_taint(taints, key)
    return [*kept, {"key": key, "value": "true", "effect": "NoSchedule"}]


def without_taint(taints: Sequence[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    return [dict(t) for t in taints if t.get("key") != key]


def evictable(pod: dict[str, Any], node: str) -> bool:
    """Pods of `node` that an eviction moves: not DaemonSet pods, not static (mirror) pods."""
    if (pod.get("spec") or {}).get("nodeName") != node:
        return False
    meta = pod.get("metadata") or {}
    if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
        return False
    return all(o.get("kind") != "DaemonSet" for o in meta.get("ownerReferences") or [])


@dataclass(frozen=True)
class RunPod:
    """What a `run_on_nodes` pod gets: the project's image, the node's GPUs, fixed CPU/memory."""

    image: str
    gpus: int
    gpu_resource: str
    cpu: str
    memory: str

    def resources(self) -> dict[str, dict[str, str]]:
        # Requests equal to limits (Guaranteed QoS): a benchmark measures the node, so it must
        # not be squeezed by what else runs there, nor squeeze it.
        amounts = {"cpu": self.cpu, "memory": self.memory}
        if self.gpus > 0:
            amounts[self.gpu_resource] = str(self.gpus)
        return {"requests": dict(amounts), "limits": dict(amounts)}


def run_job(
    name: str, node: str, command: Sequence[str], env: dict[str, str], pod: RunPod, timeout_s: float
) -> dict[str, Any]:
    """A one-pod Job bound to `node` by nodeName: it bypasses the scheduler, so cordons and
    taints (the quarantine it usually checks) do not keep it off. The kubelet still admits its
    GPU request, so it starts once the node's GPUs are free (the drain evicted their users)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "centrality"}},
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": max(1, int(timeout_s)),
            "ttlSecondsAfterFinished": 3600,
            "template": {
                "metadata": {"labels": {"centrality.io/run": name}},
                "spec": {
                    "nodeName": node,
                    "restartPolicy": "Never",
                    "tolerations": [{"operator": "Exists"}],
                    "automountServiceAccountToken": False,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": RUN_UID,
                        "runAsGroup": RUN_UID,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "run",
                            "image": pod.image,
                            "imagePullPolicy": "Always",
                            "command": list(command),
                            "env": [{"name": k, "value": v} for k, v in sorted(env.items())],
                            "resources": pod.resources(),
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                        }
                    ],
                    "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}],
                },
            },
        },
    }
