"""Kubernetes watcher: batch Jobs, Kubeflow PyTorchJobs, their Pods and Nodes, from the watch API.

One informer per kind (`informer.py`: LIST once, then WATCH from its resourceVersion, LIST
again only on 410 Gone) streams changes from its thread into the event loop. The watcher keeps
the objects in memory and reconciles only the jobs and nodes a change touched, against the
ledger, so a restart sends nothing twice. Nothing is judged before every kind has been listed
once (a Job must not be told to have ended before its pods are known), and changes arriving
within `settle_s` of each other are reconciled together (a pod's exit and its Job's failure).
A reconcile that fails (Kafka away) keeps what it had not sent and is tried again.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from functools import partial

import structlog
from kubernetes import client, config

from collectors.clock import MONOTONIC
from collectors.events import Stamp
from collectors.sink import EventSink
from collectors.watchers.hooks import ANNOTATION, parse_hooks
from collectors.watchers.k8s.informer import Delta, Informer, Key, Obj
from collectors.watchers.k8s.objects import job_observation, owners, pytorchjob_observation
from collectors.watchers.k8s.settings import K8sWatchSettings
from collectors.watchers.ledger import Ledger
from collectors.watchers.lifecycle import JobTracker
from schemas.envelope import Event
from schemas.events.jobs import JobSubmittedPayload
from schemas.events.nodes import HealthStatus
from schemas.metrics.catalog import POLLS

log = structlog.get_logger(__name__)

NODE_CHECK = "k8s_node_state"
# Informer kind → the job kind it holds (None: not a job).
KINDS: dict[str, str | None] = {
    "pods": None,
    "jobs": "Job",
    "pytorchjobs": "PyTorchJob",
    "nodes": None,
}
_OBSERVE = {"Job": job_observation, "PyTorchJob": pytorchjob_observation}
_PLURAL = {"Job": "jobs", "PyTorchJob": "pytorchjobs"}

JobKey = tuple[str, str, str]  # (kind, namespace, name)


def make_client(settings: K8sWatchSettings) -> client.ApiClient:
    if settings.host is not None:
        conf = client.Configuration()
        conf.host = settings.host
        conf.verify_ssl = settings.verify_ssl
        return client.ApiClient(conf)
    if settings.kubeconfig is not None:
        return config.new_client_from_config(config_file=str(settings.kubeconfig))
    try:
        config.load_incluster_config()
    except config.ConfigException:
        return config.new_client_from_config()
    return client.ApiClient()


class K8sWatcher:
    def __init__(self, settings: K8sWatchSettings, sink: EventSink) -> None:
        self.settings = settings
        self.sink = sink
        self.ledger = Ledger(settings.state_file)
        self.tracker = JobTracker(
            self.ledger, Stamp(source=settings.source, cluster=settings.cluster)
        )
        self.api = make_client(settings)
        self.objects: dict[str, dict[Key, Obj]] = {kind: {} for kind in KINDS}
        self.pods_by_job: dict[JobKey, dict[str, Obj]] = {}
        self.synced: set[str] = set()
        self.dirty_jobs: set[JobKey] = set()
        self.dirty_nodes: set[str] = set()
        self.jobs_removed = False

    @property
    def idle(self) -> bool:
        """Every kind listed, and everything it learned reconciled."""
        return self.synced == set(KINDS) and not self.dirty_jobs and not self.dirty_nodes

    def informers(
        self, deliver: Callable[[Delta], None], stopped: threading.Event
    ) -> list[Informer]:
        core, batch = client.CoreV1Api(self.api), client.BatchV1Api(self.api)
        custom = client.CustomObjectsApi(self.api)
        torch = ("kubeflow.org", "v1")
        ns = self.settings.namespace
        lists = {
            "pods": core.list_pod_for_all_namespaces
            if ns is None
            else partial(core.list_namespaced_pod, ns),
            "jobs": batch.list_job_for_all_namespaces
            if ns is None
            else partial(batch.list_namespaced_job, ns),
            "pytorchjobs": partial(custom.list_cluster_custom_object, *torch, "pytorchjobs")
            if ns is None
            else partial(custom.list_namespaced_custom_object, *torch, ns, "pytorchjobs"),
            "nodes": core.list_node,
        }
        return [
            Informer(
                kind,
                fn,
                deliver,
                stopped,
                timeout_s=self.settings.timeout_s,
                backoff_max_s=self.settings.backoff_max_s,
            )
            for kind, fn in lists.items()
        ]

    async def run(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Delta] = asyncio.Queue()
        stopped = threading.Event()

        def deliver(delta: Delta) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, delta)
            except RuntimeError:  # the event loop is gone: nobody listens any more
                stopped.set()

        # What polls count for the other watchers: here, each reconcile of what the watches said.
        reconciled, failed = POLLS.labels("k8s", "ok"), POLLS.labels("k8s", "failed")
        # Daemon threads: a watch blocked on a quiet stream must not hold the process at exit.
        for informer in self.informers(deliver, stopped):
            name = f"k8s-watch-{informer.kind}"
            threading.Thread(target=informer.run, name=name, daemon=True).start()
        try:
            while not stop.is_set():
                # With nothing left over from a failed reconcile, wait for news.
                waiting = self.idle or self.synced != set(KINDS)
                if waiting and not await _next(queue, stop, self.absorb):
                    break
                await MONOTONIC.sleep(self.settings.settle_s, stop)
                while not queue.empty():
                    self.absorb(queue.get_nowait())
                try:
                    await self.reconcile()
                    reconciled.inc()
                except Exception as exc:
                    log.warning("k8s_reconcile_failed", error=str(exc))
                    failed.inc()
                    await MONOTONIC.sleep(self.settings.retry_s, stop)
        finally:
            stopped.set()

    def absorb(self, delta: Delta) -> None:
        """Fold one informer's news into memory and note what it touched."""
        objects = self.objects[delta.kind]
        job_kind = KINDS[delta.kind]
        if delta.resync:
            self.synced.add(delta.kind)
            self.jobs_removed = self.jobs_removed or job_kind is not None
        for key, obj in delta.changes:
            old = objects.pop(key, None) if obj is None else objects.get(key)
            if obj is not None:
                objects[key] = obj
            ns, name = key
            if delta.kind == "pods":
                self._index_pod(ns, name, old, obj)
            elif delta.kind == "nodes":
                if obj is not None:
                    self.dirty_nodes.add(name)
            elif job_kind is not None:
                self.dirty_jobs.add((job_kind, ns, name))
                self.jobs_removed = self.jobs_removed or obj is None

    def _index_pod(self, ns: str, name: str, old: Obj | None, new: Obj | None) -> None:
        if old is not None:
            for kind, job in owners(old):
                pods = self.pods_by_job.get((kind, ns, job), {})
                pods.pop(name, None)
                if not pods:
                    self.pods_by_job.pop((kind, ns, job), None)
                self.dirty_jobs.add((kind, ns, job))
        if new is not None:
            for kind, job in owners(new):
                self.pods_by_job.setdefault((kind, ns, job), {})[name] = new
                self.dirty_jobs.add((kind, ns, job))

    async def reconcile(self) -> list[Event]:
        """Events for what changed since the last reconcile; none before every kind is known."""
        if self.synced != set(KINDS):
            return []
        sent: list[Event] = []
        try:
            for key in sorted(self.dirty_jobs):
                sent += await self._job(key)
                self.dirty_jobs.discard(key)
            if self.jobs_removed:
                present = {
                    f"k8s/{ns}/{name}"
                    for plural in _PLURAL.values()
                    for ns, name in self.objects[plural]
                }
                self.tracker.forget_ended("k8s/", present)
                self.jobs_removed = False
            for node in sorted(self.dirty_nodes):
                obj = self.objects["nodes"].get(("", node))
                if obj is not None:
                    sent += await self._node(obj)
                self.dirty_nodes.discard(node)
        finally:
            self.ledger.save()
        return sent

    async def _job(self, key: JobKey) -> list[Event]:
        kind, ns, name = key
        obj = self.objects[_PLURAL[kind]].get((ns, name))
        if obj is None:
            return []
        jid = f"k8s/{ns}/{name}"
        pods = list(self.pods_by_job.get(key, {}).values())
        seen = _OBSERVE[kind](obj, pods)
        events, entry = self.tracker.observe(jid, seen, self._submitted(kind, obj))
        return await self.tracker.commit(self.sink, jid, events, entry)

    def _submitted(self, kind: str, obj: Obj) -> JobSubmittedPayload:
        meta = obj["metadata"]
        return JobSubmittedPayload(
            name=meta["name"],
            queue=meta.get("namespace", "default"),
            raw={"kind": kind, "uid": str(meta.get("uid") or "")},
            hooks=parse_hooks(
                (meta.get("annotations") or {}).get(ANNOTATION), job=str(meta["name"])
            ),
        )

    async def _node(self, node: Obj) -> list[Event]:
        name = node["metadata"]["name"]
        ready = next(
            (c for c in (node.get("status") or {}).get("conditions") or [] if c["type"] == "Ready"),
            None,
        )
        cordoned = bool((node.get("spec") or {}).get("unschedulable"))
        taints = [t["key"] for t in (node.get("spec") or {}).get("taints") or []]
        if ready is not None and ready.get("status") != "True":
            status, message = HealthStatus.CRITICAL, f"not ready: {ready.get('reason') or ''}"
        elif cordoned:
            status, message = HealthStatus.WARN, "cordoned"
        else:
            status, message = HealthStatus.OK, "ready" if ready else "schedulable"
        details = {"unschedulable": cordoned, "taints": taints}
        key = f"node:{name}"
        events, entry = self.tracker.node_state(key, name, NODE_CHECK, status, message, details)
        return await self.tracker.commit(self.sink, key, events, entry)


async def _next(
    queue: asyncio.Queue[Delta], stop: asyncio.Event, absorb: Callable[[Delta], None]
) -> bool:
    """Wait for the next delta (absorbed) or the stop; False when stopped."""
    get = asyncio.ensure_future(queue.get())
    stopping = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait({get, stopping}, return_when=asyncio.FIRST_COMPLETED)
    for task in (get, stopping):
        if task not in done:
            task.cancel()
    if get in done:
        absorb(get.result())
        return True
    return False
