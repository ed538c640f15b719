"""Pure transformations of Kubernetes objects (plain dicts as the API serves them)."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any

RESUME_ENV = "CENTRALITY_RESUME_FROM"
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


def recreated(obj: dict[str, Any], checkpoint_uri: str | None) -> dict[str, Any]:
    """The same Job/PyTorchJob, fresh, its containers resuming from `checkpoint_uri`."""
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
    for container in _containers(new):
        env = [e for e in container.get("env") or [] if e.get("name") != RESUME_ENV]
        if checkpoint_uri is not None:
            env.append({"name": RESUME_ENV, "value": checkpoint_uri})
        container["env"] = env
    return new


def _containers(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    spec = obj.get("spec", {})
    templates = [spec.get("template", {})]
    templates += [r.get("template", {}) for r in (spec.get("pytorchReplicaSpecs") or {}).values()]
    for template in templates:
        yield from (template.get("spec") or {}).get("containers") or []


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


def run_job(
    name: str, node: str, command: Sequence[str], env: dict[str, str], image: str, timeout_s: float
) -> dict[str, Any]:
    """A one-pod Job bound to `node` by nodeName: it bypasses the scheduler, so cordons and
    taints (the quarantine it usually checks) do not keep it off."""
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
                    "containers": [
                        {
                            "name": "run",
                            "image": image,
                            "command": list(command),
                            "env": [{"name": k, "value": v} for k, v in sorted(env.items())],
                        }
                    ],
                },
            },
        },
    }
