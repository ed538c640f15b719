"""A Kubernetes API for integration tests: kmock's emulator on loopback, in its own thread.

kmock (https://pypi.org/project/kmock/) keeps objects in memory and answers the official client
for nodes, pods, Jobs and custom resources. Its gaps, filled here: there is no eviction
subresource (an eviction here deletes the pod, like a real API server when no
PodDisruptionBudget objects) and no kubelet (`finish_pod` plays one: it creates the pod of a Job,
its exit code and its log). It ignores label and field selectors, has no resourceVersion and
answers 200 to a create. The adapter runs the blocking client, so the emulator gets a thread and
an event loop of its own.

    from tests.support.kube import KubeApi, kube_fixture  # noqa: F401

    def test_x(kube: KubeApi) -> None:
        kube.create("nodes", {"metadata": {"name": "n1"}})
        KubernetesAdapter(KubernetesSettings(host=kube.url))...
        assert kube.requests("PATCH", "/api/v1/nodes/n1")[0] == {...}
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import kmock
import pytest
import requests


class KubeApi:
    def __init__(self) -> None:
        self.url = ""
        self.logs: dict[tuple[str, str], str] = {}
        self._loop = asyncio.new_event_loop()
        self._started: Future[str] = Future()
        self._stop: asyncio.Event | None = None
        self._served: Future[None] = Future()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.emulator: kmock.KubernetesEmulator | None = None

    def start(self) -> None:
        self._thread.start()
        self._served = asyncio.run_coroutine_threadsafe(self._serve(), self._loop)
        self.url = self._started.result(timeout=10)

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._served.result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def create(self, plural_path: str, obj: dict[str, Any]) -> dict[str, Any]:
        """POST `obj` to e.g. `api/v1/nodes` or `apis/batch/v1/namespaces/ns/jobs`."""
        path = plural_path if "/" in plural_path else f"api/v1/{plural_path}"
        reply = requests.post(f"{self.url}/{path}", json=obj, timeout=5)
        reply.raise_for_status()
        return dict(reply.json())

    def get(self, path: str) -> dict[str, Any] | None:
        reply = requests.get(f"{self.url}/{path}", timeout=5)
        return None if reply.status_code == 404 else dict(reply.json())

    def requests(self, method: str, path: str) -> list[Any]:
        """Bodies of the requests the server received for `method path`, in order."""
        assert self.emulator is not None
        return [r.data for r in list(self.emulator) if r.method == method and r.url.path == path]

    def finish_pod(
        self, namespace: str, pod: str, labels: dict[str, str], node: str, exit_code: int, log: str
    ) -> None:
        """Be the kubelet: the pod ran on `node`, printed `log`, exited with `exit_code`."""
        self.logs[(namespace, pod)] = log
        self.create(
            f"api/v1/namespaces/{namespace}/pods",
            {
                "metadata": {"name": pod, "namespace": namespace, "labels": labels},
                "spec": {"nodeName": node, "containers": [{"name": "run", "image": "x"}]},
                "status": {
                    "phase": "Succeeded" if exit_code == 0 else "Failed",
                    "containerStatuses": [
                        {
                            "name": "run",
                            "ready": False,
                            "restartCount": 0,
                            "image": "x",
                            "imageID": "",
                            "state": {"terminated": {"exitCode": exit_code}},
                        }
                    ],
                },
            },
        )

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        async with kmock.KubernetesEmulator() as emulator, kmock.Server(emulator) as server:
            self.emulator = emulator
            emulator[kmock.method.POST, kmock.subresource("eviction")] << self._evict
            emulator[kmock.method.GET, kmock.subresource("log")] << self._log
            self._started.set_result(str(server.url).rstrip("/"))
            await self._stop.wait()

    def _evict(self, request: kmock.Request) -> dict[str, Any]:
        assert self.emulator is not None
        key = (request.resource, request.namespace, request.name)
        if key not in self.emulator.objects or self.emulator.objects[key].deleted:
            raise kmock.KubernetesObjectNotFoundError()
        self.emulator.objects[key].delete()
        return {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}

    def _log(self, request: kmock.Request) -> bytes:
        text = self.logs.get((str(request.namespace), str(request.name)), "")
        tail = request.params.get("tailLines")
        if tail is not None:
            text = "".join(text.splitlines(keepends=True)[-int(tail) :])
        return text.encode()


@pytest.fixture(name="kube")
def kube_fixture() -> Iterator[KubeApi]:
    """A fresh, empty API server per test (it starts in milliseconds)."""
    api = KubeApi()
    api.start()
    try:
        yield api
    finally:
        api.stop()
