"""The project's own RBAC on the test API server, and what each worker did with it.

The ServiceAccounts, ClusterRoles and bindings of `infra/k8s` (as kustomize renders the base)
are applied to the session's API server; TokenRequest mints a token for each worker that calls
the API, and each gets a kubeconfig holding only that token. The watcher and the adapter run
with those in every Kubernetes test, so a verb the manifests forgot is refused there as it would
be in a cluster. The audit log tells what each identity asked and what it was granted.

    from tests.support.kube_rbac import KubeWorkers, kube_workers_fixture  # noqa: F401
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.kube_api import KubeApiServer
from tests.support.kustomize import render

# Applied in this order: a ServiceAccount's namespace first, a binding's role before it.
RBAC_KINDS = (
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "Role",
    "ClusterRoleBinding",
    "RoleBinding",
)
WATCHER, ACTIONS = "centrality-watcher", "centrality-actions"

# (API group, resource or resource/subresource, verb)
Grant = tuple[str, str, str]


@dataclass(frozen=True)
class KubeWorkers:
    namespace: str
    tokens: dict[str, str]  # ServiceAccount name → a token minted for it
    kubeconfigs: dict[str, Path]  # ServiceAccount name → a kubeconfig with its token alone
    roles: dict[str, list[dict[str, Any]]]  # ServiceAccount → the rules bound to it, as rendered

    @property
    def watcher(self) -> Path:
        return self.kubeconfigs[WATCHER]

    @property
    def actions(self) -> Path:
        return self.kubeconfigs[ACTIONS]

    def user(self, account: str) -> str:
        return f"system:serviceaccount:{self.namespace}:{account}"


def granted(rules: list[dict[str, Any]]) -> set[Grant]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule.get("apiGroups") or [""]
        for resource in rule.get("resources") or []
        for verb in rule.get("verbs") or []
    }


def asked(audit: list[dict[str, Any]], user: str) -> dict[Grant, set[int]]:
    """What `user` asked for, and the status codes it got for each."""
    seen: dict[Grant, set[int]] = {}
    for event in audit:
        ref = event.get("objectRef") or {}
        if event["user"]["username"] != user or "resource" not in ref:
            continue
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        grant = (ref.get("apiGroup") or "", resource, event["verb"])
        seen.setdefault(grant, set()).add(int(event["responseStatus"]["code"]))
    return seen


def apply_workers_rbac(api: KubeApiServer, directory: Path) -> KubeWorkers:
    docs = [d for d in render("base") if d["kind"] in RBAC_KINDS]
    for doc in sorted(docs, key=lambda d: RBAC_KINDS.index(d["kind"])):
        api.apply(doc)
    accounts = {
        d["metadata"]["name"]: d["metadata"]["namespace"]
        for d in docs
        if d["kind"] == "ServiceAccount"
    }
    namespace = accounts[WATCHER]
    tokens = {account: api.token(namespace, account) for account in (WATCHER, ACTIONS)}
    kubeconfigs = {
        account: api.kubeconfig(directory / f"{account}.kubeconfig", token)
        for account, token in tokens.items()
    }
    rules = {d["metadata"]["name"]: d["rules"] for d in docs if d["kind"] == "ClusterRole"}
    bound: dict[str, list[dict[str, Any]]] = {account: [] for account in tokens}
    for binding in (d for d in docs if d["kind"] == "ClusterRoleBinding"):
        for subject in binding["subjects"]:
            if subject["kind"] == "ServiceAccount" and subject["name"] in bound:
                bound[subject["name"]] += rules[binding["roleRef"]["name"]]
    return KubeWorkers(namespace, tokens, kubeconfigs, bound)


@pytest.fixture(scope="session", name="kube_workers")
def kube_workers_fixture(
    kube_api: KubeApiServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KubeWorkers]:
    yield apply_workers_rbac(kube_api, tmp_path_factory.mktemp("kube-workers"))
