"""A Kubernetes API that speaks LIST and WATCH as kube-apiserver does, for the watcher's tests.

kmock (tests/support/kube.py) recognises a watch only by `watch=true`, while the official
Python client sends `watch=True` (kube-apiserver parses it as a Go bool: both are fine), and it
keeps no resourceVersion. This server keeps what the watch protocol rests on, over real HTTP:

- one resourceVersion counter for everything; every change is an event in a history;
- LIST answers the items and the current resourceVersion, in pages (`limit`, `continue`);
- WATCH from a resourceVersion streams (chunked, one JSON object per line) every later event
  of that collection, then live ones, a BOOKMARK first when asked for, until `timeoutSeconds`;
- a resourceVersion older than the compacted history gets an ERROR event with a 410 Status,
  as etcd compaction makes kube-apiserver answer;
- a collection not served (a CRD not installed) is 404.

Every request is recorded (method, path, query) so tests can count LISTs and WATCHes.

    from tests.support.kube_watch import WatchApi, watch_api_fixture  # noqa: F401
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

# Collection path (cluster-wide) → the list kind it answers.
COLLECTIONS = {
    "/api/v1/pods": "PodList",
    "/api/v1/nodes": "NodeList",
    "/apis/batch/v1/jobs": "JobList",
    "/apis/kubeflow.org/v1/pytorchjobs": "PyTorchJobList",
}


class WatchApi:
    def __init__(self) -> None:
        self.version = 100
        self.compacted = 0
        self.objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        self.history: list[tuple[int, str, str, dict[str, Any]]] = []  # rv, collection, type, obj
        self.served = set(COLLECTIONS)
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.held = False  # open watches deliver nothing (a network partition)
        self.epoch = 0  # open watches of an older epoch end (their connections drop)
        self.changed = threading.Condition()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self.changed:
            self.served.clear()  # open watches end
            self.changed.notify_all()
        self.server.shutdown()
        self.server.server_close()

    # --- what tests do to the cluster ---

    def put(self, collection: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or replace `obj` in e.g. `/api/v1/pods`; returns it with its resourceVersion."""
        meta = obj.setdefault("metadata", {})
        key = (str(meta.get("namespace") or ""), str(meta["name"]))
        with self.changed:
            self.version += 1
            meta["resourceVersion"] = str(self.version)
            kind = "MODIFIED" if key in self.objects.setdefault(collection, {}) else "ADDED"
            self.objects[collection][key] = json.loads(json.dumps(obj))
            self.history.append((self.version, collection, kind, self.objects[collection][key]))
            self.changed.notify_all()
        return obj

    def patch(self, collection: str, namespace: str, name: str, change: dict[str, Any]) -> None:
        obj = json.loads(json.dumps(self.objects[collection][(namespace, name)]))
        _merge(obj, change)
        self.put(collection, obj)

    def delete(self, collection: str, namespace: str, name: str) -> None:
        with self.changed:
            obj = self.objects[collection].pop((namespace, name))
            self.version += 1
            obj["metadata"]["resourceVersion"] = str(self.version)
            self.history.append((self.version, collection, "DELETED", obj))
            self.changed.notify_all()

    def compact(self) -> None:
        """Forget the history so far (etcd compaction): older watches get 410 Gone."""
        with self.changed:
            self.compacted = self.version
            self.history.clear()

    def hold(self) -> None:
        """Open watches stop delivering, as behind a partition (what happens now is missed)."""
        with self.changed:
            self.held = True

    def sever(self) -> None:
        """Every open watch ends undelivered; new ones are served again."""
        with self.changed:
            self.epoch += 1
            self.held = False
            self.changed.notify_all()

    def count(self, path: str, *, watch: bool) -> int:
        return sum(
            1
            for _, p, q in self.requests
            if p == path and (q.get("watch", "").lower() == "true") == watch
        )

    # --- the protocol ---

    def list_page(self, collection: str, namespace: str | None, query: dict[str, str]) -> bytes:
        with self.changed:
            items = [o for (ns, _), o in sorted(self.objects.get(collection, {}).items())]
            version = self.version
        items = [
            o for o in items if namespace is None or o["metadata"].get("namespace") == namespace
        ]
        start = int(query.get("continue") or 0)
        limit = int(query.get("limit") or 0) or len(items) or 1
        page, rest = items[start : start + limit], items[start + limit :]
        meta: dict[str, Any] = {"resourceVersion": str(version)}
        if rest:
            meta["continue"] = str(start + limit)
        return json.dumps(
            {"kind": COLLECTIONS[collection], "metadata": meta, "items": page}
        ).encode()

    def watch_events(
        self, collection: str, namespace: str | None, query: dict[str, str]
    ) -> Iterator[dict[str, Any]]:
        since = int(query.get("resourceVersion") or self.version)
        epoch = self.epoch
        deadline = time.monotonic() + float(query.get("timeoutSeconds") or 1800)
        if since < self.compacted:
            yield {
                "type": "ERROR",
                "object": {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "message": f"too old resource version: {since} ({self.compacted})",
                    "reason": "Expired",
                    "code": 410,
                },
            }
            return
        if query.get("allowWatchBookmarks", "").lower() == "true":
            yield {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": str(since)}}}
        while time.monotonic() < deadline:
            with self.changed:
                if collection not in self.served or epoch != self.epoch:
                    return
                due = (
                    []
                    if self.held
                    else [
                        (rv, kind, obj)
                        for rv, c, kind, obj in self.history
                        if rv > since and c == collection
                    ]
                )
                if not due:
                    self.changed.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
                    continue
            for rv, kind, obj in due:
                since = rv
                if namespace is None or obj["metadata"].get("namespace") == namespace:
                    yield {"type": kind, "object": obj}


def _merge(obj: dict[str, Any], change: dict[str, Any]) -> None:
    """JSON merge patch (RFC 7386)."""
    for key, value in change.items():
        if value is None:
            obj.pop(key, None)
        elif isinstance(value, dict) and isinstance(obj.get(key), dict):
            _merge(obj[key], value)
        else:
            obj[key] = value


def _collection(path: str) -> tuple[str, str | None] | None:
    """`/api/v1/namespaces/ml/pods` → (`/api/v1/pods`, `ml`); a cluster-wide path → (it, None)."""
    if path in COLLECTIONS:
        return path, None
    head, sep, tail = path.partition("/namespaces/")
    if sep and "/" in tail:
        namespace, plural = tail.split("/", 1)
        if f"{head}/{plural}" in COLLECTIONS:
            return f"{head}/{plural}", namespace
    return None


def _handler(api: WatchApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            api.requests.append(("GET", url.path, query))
            found = _collection(url.path)
            if found is None or found[0] not in api.served:
                body = json.dumps({"kind": "Status", "code": 404, "reason": "NotFound"}).encode()
                self._send(404, body)
                return
            collection, namespace = found
            if query.get("watch", "").lower() != "true":
                self._send(200, api.list_page(collection, namespace, query))
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for event in api.watch_events(collection, namespace, query):
                    self._chunk(json.dumps(event).encode() + b"\n")
                self._chunk(b"")
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


@pytest.fixture(name="watch_api")
def watch_api_fixture() -> Iterator[WatchApi]:
    api = WatchApi()
    api.start()
    try:
        yield api
    finally:
        api.stop()
