"""A real Kubernetes API server for the tests: etcd and kube-apiserver, as envtest runs them.

`make tools` builds both from the Go module proxy (tests/go/etcd, tests/go/kube-apiserver) into
.tools/bin. The session fixture starts them on loopback ports under a private directory:
serving certificates made at start (tests/support/tls.py), RBAC on, an admin token (group
`system:masters`) for the tests' own calls, a service-account signing key so TokenRequest
mints tokens, and an audit log of every request (who, verb, resource, answer). The CRDs of
PyTorchJob (Kubeflow Training Operator), JobSet and RayJob (KubeRay) are installed from their
upstream manifests, which `make tools` takes out of the Go modules tests/go/crds pins.

There is no controller manager and no kubelet: nothing creates a Job's pods, runs them, or
computes a PodDisruptionBudget's status. Tests do that through the API, as envtest users do
(`create`, `patch` of `/status`, `finish_pod`); nodes made by `node` point the API server at
a stand-in for the kubelet's log endpoint (tests/support/kubelet.py), so `pods/log` works.
Every namespace a test makes gets its `default` ServiceAccount (the ServiceAccount admission
plugin wants it; its controller does not run).

    from tests.support.kube_api import KubeApiServer, kube_api_fixture  # noqa: F401

    def test_x(kube_api: KubeApiServer, unique: str) -> None:
        ns = kube_api.namespace(f"t{unique}")
        kube_api.create(f"api/v1/namespaces/{ns}/pods", {...})
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from centrality.stack.process import ManagedProcess, ServiceError
from tests.ports import free_ports
from tests.support.kubelet import KubeletLogs
from tests.support.tls import ServingCertificate, make_serving_certificate

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".tools" / "bin"
# Out of the modules tests/go/crds pins, by `make tools`.
CRDS = ROOT / ".tools" / "crds"
ADMIN_TOKEN = "centrality-test-admin"
MERGE = "application/merge-patch+json"
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata"}],
}


@dataclass
class KubeApiServer:
    run_dir: Path
    start_timeout_s: float = 60.0
    url: str = ""
    etcd_url: str = ""
    certs: ServingCertificate | None = None
    kubelet: KubeletLogs | None = None
    _session: requests.Session = field(default_factory=requests.Session)

    @property
    def ca(self) -> Path:
        assert self.certs is not None
        return self.certs.ca

    @property
    def audit_log(self) -> Path:
        return self.run_dir / "audit.log"

    def start(self) -> None:
        crds = sorted(CRDS.glob("*.yaml"))
        missing = [b for b in ("etcd", "kube-apiserver") if not (BIN / b).is_file()]
        if missing or not crds:
            raise ServiceError(f"{', '.join(missing) or 'the CRDs'} missing: run `make tools`")
        etcd_port, peer_port, api_port = free_ports(3)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.certs = make_serving_certificate(self.run_dir / "certs")
        self.kubelet = KubeletLogs(self.certs)
        self.kubelet.start()
        self._etcd().start(
            [
                str(BIN / "etcd"),
                "--name=test",
                f"--data-dir={self.run_dir / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{etcd_port}",
                f"--advertise-client-urls=http://127.0.0.1:{etcd_port}",
                f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-cluster=test=http://127.0.0.1:{peer_port}",
                "--unsafe-no-fsync",  # a throwaway store: durability buys nothing here
                "--log-level=warn",
            ]
        )
        self.etcd_url = f"http://127.0.0.1:{etcd_port}"
        self._etcd().wait_until(lambda: _ok(f"{self.etcd_url}/health"), self.start_timeout_s)
        self._apiserver().start([str(BIN / "kube-apiserver"), *self._apiserver_flags(api_port)])
        self.url = f"https://127.0.0.1:{api_port}"
        self._session.headers["Authorization"] = f"Bearer {ADMIN_TOKEN}"
        self._apiserver().wait_until(self._ready, self.start_timeout_s)
        self._install_crds(crds)

    def stop(self) -> None:
        # A throwaway server: a graceful shutdown (draining watches) would buy nothing.
        self._apiserver().stop(timeout_s=2)
        self._etcd().stop(timeout_s=5)
        if self.kubelet is not None:
            self.kubelet.stop()

    # --- the tests' own calls, as an administrator ---

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        # `verify` per request: REQUESTS_CA_BUNDLE in the environment would override the session's.
        url = f"{self.url}/{path.lstrip('/')}"
        return self._session.request(method, url, timeout=10, verify=str(self.ca), **kwargs)

    def get(self, path: str) -> dict[str, Any] | None:
        reply = self.request("GET", path)
        if reply.status_code == 404:
            return None
        return _json(reply)

    def create(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        return _json(self.request("POST", path, json=obj))

    def patch(self, path: str, change: dict[str, Any]) -> dict[str, Any]:
        """A JSON merge patch; `path` may end in `/status` (what controllers write)."""
        return _json(
            self.request("PATCH", path, data=json.dumps(change), headers={"Content-Type": MERGE})
        )

    def delete(self, path: str) -> None:
        """Delete now, dependents left to the garbage collector (which does not run here: the
        default for Jobs, orphaning, would wait for it)."""
        reply = self.request("DELETE", path, json={"propagationPolicy": "Background"})
        if reply.status_code != 404:
            _json(reply)

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply of one manifest object (the kinds `_collection` knows)."""
        meta = obj["metadata"]
        path = f"{_collection(obj['kind'], meta.get('namespace'))}/{meta['name']}"
        return _json(
            self.request(
                "PATCH",
                path,
                params={"fieldManager": "centrality-tests", "force": "true"},
                data=json.dumps(obj),
                headers={"Content-Type": "application/apply-patch+yaml"},
            )
        )

    def namespace(self, name: str) -> str:
        self.create("api/v1/namespaces", {"metadata": {"name": name}})
        self.create(f"api/v1/namespaces/{name}/serviceaccounts", {"metadata": {"name": "default"}})
        return name

    def token(self, namespace: str, account: str, expiry_s: int = 3600) -> str:
        """A token for a ServiceAccount, minted by TokenRequest as the kubelet asks for one."""
        reply = self.create(
            f"api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
            {"apiVersion": "authentication.k8s.io/v1", "spec": {"expirationSeconds": expiry_s}},
        )
        return str(reply["status"]["token"])

    def kubeconfig(self, path: Path, token: str, server: str | None = None) -> Path:
        """A kubeconfig that reaches this server (or `server`, a way to it) with `token`."""
        cluster = {"server": server or self.url, "certificate-authority": str(self.ca)}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "test", "cluster": cluster}],
            "users": [{"name": "user", "user": {"token": token}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "user"}}],
            "current-context": "test",
        }
        path.write_text(yaml.safe_dump(config))
        return path

    def audit(self, stage: str = "ResponseComplete") -> list[dict[str, Any]]:
        """Every request that reached `stage` so far, oldest first (a watch is answered when
        it ends; it is `ResponseStarted` as soon as it begins)."""
        text = self.audit_log.read_text() if self.audit_log.exists() else ""
        # The API server may be writing the last line as it is read: complete lines only.
        lines = text[: text.rfind("\n") + 1].splitlines()
        events = [json.loads(line) for line in lines if line.strip()]
        return [e for e in events if e.get("stage") == stage]

    def compact(self) -> int:
        """Compact etcd's history up to now (what kube-apiserver does every 5 minutes): older
        resourceVersions answer 410 Gone. Returns the revision compacted to."""
        status = requests.post(f"{self.etcd_url}/v3/kv/range", json={"key": "AA=="}, timeout=5)
        revision = int(status.json()["header"]["revision"])
        done = requests.post(
            f"{self.etcd_url}/v3/kv/compaction",
            json={"revision": str(revision), "physical": True},
            timeout=10,
        )
        done.raise_for_status()
        return revision

    # --- the kubelet's and the controllers' part ---

    def node(self, name: str, gpus: int = 0) -> dict[str, Any]:
        """A Ready node with `gpus` GPUs whose kubelet serves logs (the stand-in's port)."""
        assert self.kubelet is not None
        self.create("api/v1/nodes", {"metadata": {"name": name}})
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady"}
        return self.patch(
            f"api/v1/nodes/{name}/status",
            {
                "status": {
                    "conditions": [ready],
                    "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": self.kubelet.port}},
                    "capacity": {"nvidia.com/gpu": str(gpus)},
                    "allocatable": {"nvidia.com/gpu": str(gpus)},
                }
            },
        )

    def finish_pod(
        self,
        namespace: str,
        name: str,
        labels: dict[str, str],
        node: str,
        exit_code: int,
        *,
        conditions: list[dict[str, Any]] | None = None,
        log: str | None = None,
    ) -> dict[str, Any]:
        """A pod that ran on `node`, printed `log` and exited with `exit_code`: created bound
        to the node, then its status written as the kubelet writes it."""
        assert self.kubelet is not None
        if log is not None:
            self.kubelet.logs[(namespace, name, "run")] = log
        self.create(
            f"api/v1/namespaces/{namespace}/pods",
            {
                "metadata": {"name": name, "labels": labels},
                "spec": {
                    "nodeName": node,
                    "restartPolicy": "Never",
                    "containers": [{"name": "run", "image": "trainer:1"}],
                },
            },
        )
        stamp = _now()
        terminated = {
            "exitCode": exit_code,
            "reason": "Completed" if exit_code == 0 else "Error",
            "startedAt": stamp,
            "finishedAt": stamp,
        }
        return self.patch(
            f"api/v1/namespaces/{namespace}/pods/{name}/status",
            {
                "status": {
                    "phase": "Succeeded" if exit_code == 0 else "Failed",
                    "startTime": stamp,
                    "conditions": conditions or [],
                    "containerStatuses": [
                        {
                            "name": "run",
                            "image": "trainer:1",
                            "imageID": "",
                            "ready": False,
                            "restartCount": 0,
                            "state": {"terminated": terminated},
                        }
                    ],
                }
            },
        )

    # --- running it ---

    def _apiserver_flags(self, port: int) -> list[str]:
        assert self.certs is not None
        d = self.run_dir
        (d / "tokens.csv").write_text(f"{ADMIN_TOKEN},admin,admin-uid,system:masters\n")
        (d / "audit-policy.yaml").write_text(yaml.safe_dump(AUDIT_POLICY))
        _openssl("genrsa", "-out", str(d / "sa.key"), "2048")
        return [
            f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={port}",
            f"--tls-cert-file={self.certs.cert}",
            f"--tls-private-key-file={self.certs.key}",
            f"--token-auth-file={d / 'tokens.csv'}",
            f"--kubelet-certificate-authority={self.certs.ca}",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={d / 'sa.key'}",
            f"--service-account-signing-key-file={d / 'sa.key'}",
            "--service-cluster-ip-range=10.0.0.0/24",
            f"--audit-policy-file={d / 'audit-policy.yaml'}",
            f"--audit-log-path={self.audit_log}",
            # The tests compact etcd themselves when they want 410 Gone (`compact`). Jobs skip
            # the watch cache, so their watches read etcd and a compacted resourceVersion is
            # Gone at once; pods and nodes keep the cache, and its bookmarks.
            "--etcd-compaction-interval=0",
            "--watch-cache-sizes=jobs.batch#0",
            # Loopback is no address for the `kubernetes` Service: keep it out of its endpoints.
            "--endpoint-reconciler-type=none",
        ]

    def _ready(self) -> bool:
        try:
            return self.request("GET", "readyz").status_code == 200
        except requests.RequestException:
            return False

    def _install_crds(self, manifests: list[Path]) -> None:
        # Sent as the YAML they are: the API server reads YAML (faster than parsing it here).
        crds = [
            _json(
                self.request(
                    "POST",
                    "apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                    data=path.read_bytes(),
                    headers={"Content-Type": "application/yaml"},
                )
            )
            for path in manifests
        ]
        # Established is not yet served: a LIST answers 429 until the kind's storage is ready.
        collections = [
            f"apis/{crd['spec']['group']}/{version['name']}/{crd['spec']['names']['plural']}"
            for crd in crds
            for version in crd["spec"]["versions"]
            if version.get("served")
        ]
        deadline = time.monotonic() + self.start_timeout_s
        while not all(self.request("GET", c).ok for c in collections):
            if time.monotonic() > deadline:
                raise ServiceError(f"CRDs not served: {collections}")
            time.sleep(0.1)

    def _etcd(self) -> ManagedProcess:
        return ManagedProcess("etcd", self.run_dir / "log")

    def _apiserver(self) -> ManagedProcess:
        return ManagedProcess("kube-apiserver", self.run_dir / "log")


_COLLECTIONS = {
    "Namespace": ("api/v1", "namespaces"),
    "ServiceAccount": ("api/v1", "serviceaccounts"),
    "ClusterRole": ("apis/rbac.authorization.k8s.io/v1", "clusterroles"),
    "ClusterRoleBinding": ("apis/rbac.authorization.k8s.io/v1", "clusterrolebindings"),
    "Role": ("apis/rbac.authorization.k8s.io/v1", "roles"),
    "RoleBinding": ("apis/rbac.authorization.k8s.io/v1", "rolebindings"),
}


def _collection(kind: str, namespace: str | None) -> str:
    group, plural = _COLLECTIONS[kind]
    return f"{group}/namespaces/{namespace}/{plural}" if namespace else f"{group}/{plural}"


def _json(reply: requests.Response) -> dict[str, Any]:
    if not reply.ok:
        raise AssertionError(
            f"{reply.request.method} {reply.url}: {reply.status_code} {reply.text[:500]}"
        )
    return dict(reply.json())


def _ok(url: str) -> bool:
    try:
        return requests.get(url, timeout=1).ok
    except requests.RequestException:
        return False


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], capture_output=True, check=True, timeout=30)


@pytest.fixture(scope="session", name="kube_api")
def kube_api_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    server = KubeApiServer(tmp_path_factory.mktemp("kube-api"))
    try:
        server.start()
        yield server
    finally:
        server.stop()
