"""Kubernetes watcher: the job kinds of `kinds/` (batch Jobs, PyTorchJobs, JobSets, RayJobs),
their Pods, and Nodes, from the watch API.

One informer per kind (`informer.py`: LIST once, then WATCH from its resourceVersion, LIST
again only on 410 Gone) streams changes from its thread into the event loop. The watcher keeps
the objects in memory and reconciles only the jobs and nodes a change touched, against the
ledger, so a restart sends nothing twice. Nothing is judged before every kind has been listed
once (a Job must not be told to have ended before its pods are known), and changes arriving
within `settle_s` of each other are reconciled together (a pod's exit and its Job's failure).
A reconcile that fails (Kafka away) keeps what it had not sent and is tried again. A kind the
cluster does not serve (its operator not installed) is empty until it appears. A node's state
becomes NodeHealthChecked, its labels NodeFactsObserved (node groups select by them), with its
leaf switch from the label `switch_label` names (incidents name it as their failure domain).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import structlog
from kubernetes import client, config

from collectors.clock import MONOTONIC
from collectors.events import Stamp
from collectors.sink import EventSink
from collectors.watchers.hooks import ANNOTATION, parse_hooks
from collectors.watchers.k8s.informer import Delta, Informer, Key, Obj
from collectors.watchers.k8s.kinds import JobKind, job_kinds
from collectors.watchers.k8s.settings import K8sWatchSettings
from collectors.watchers.ledger import Ledger
from collectors.watchers.lifecycle import JobTracker
from schemas.envelope import Event
from schemas.events.jobs import JobSubmittedPayload
from schemas.events.nodes import HealthStatus, NodeFactsObservedPayload
from schemas.limits import MAP_ENTRIES, MAP_KEY, NAME, TEXT
from schemas.runtime.metrics.catalog import POLLS

log = structlog.get_logger(__name__)

NODE_CHECK = "k8s_node_state"
JOB_KINDS = job_kinds()
# What the informers hold: pods, nodes, and each job kind by its plural.
KINDS = ("pods", "nodes", *JOB_KINDS)

JobKey = tuple[str, str, str]  # (plural, namespace, name)
Link = tuple[str, str, str]  # (plural, namespace, the value of that kind's pod labels)


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
        self.pods_by_link: dict[Link, dict[str, Obj]] = {}
        self.jobs_by_link: dict[Link, set[str]] = {}
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
        core, custom = client.CoreV1Api(self.api), client.CustomObjectsApi(self.api)
        ns = self.settings.namespace
        lists: dict[str, Callable[..., Any]] = {
            "pods": core.list_pod_for_all_namespaces
            if ns is None
            else partial(core.list_namespaced_pod, ns),
            "nodes": core.list_node,
        }
        for plural, kind in JOB_KINDS.items():
            api = (kind.group, kind.version)
            lists[plural] = (
                partial(custom.list_cluster_custom_object, *api, plural)
                if ns is None
                else partial(custom.list_namespaced_custom_object, *api, ns, plural)
            )
        return [
            Informer(
                kind,
                fn,
                deliver,
                stopped,
                timeout_s=self.settings.timeout_s,
                backoff_max_s=self.settings.backoff_max_s,
                page_size=self.settings.page_size,
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
        job_kind = JOB_KINDS.get(delta.kind)
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
                self._index_job(job_kind, ns, name, old, obj)
                self.dirty_jobs.add((delta.kind, ns, name))
                self.jobs_removed = self.jobs_removed or obj is None

    def _index_job(
        self, kind: JobKind, ns: str, name: str, old: Obj | None, new: Obj | None
    ) -> None:
        """Which pod label value leads to this job (a RayJob's changes with its cluster)."""
        for obj, add in ((old, False), (new, True)):
            value = kind.link(obj) if obj is not None else None
            if value is None:
                continue
            link = (kind.plural, ns, value)
            names = self.jobs_by_link.setdefault(link, set())
            if add:
                names.add(name)
            else:
                names.discard(name)
            if not names:
                self.jobs_by_link.pop(link)

    def _links(self, ns: str, pod: Obj | None) -> set[Link]:
        labels = ((pod or {}).get("metadata") or {}).get("labels") or {}
        return {
            (plural, ns, str(labels[label]))
            for plural, kind in JOB_KINDS.items()
            for label in kind.pod_labels
            if labels.get(label)
        }

    def _index_pod(self, ns: str, name: str, old: Obj | None, new: Obj | None) -> None:
        for link in self._links(ns, old) | self._links(ns, new):
            pods = self.pods_by_link.setdefault(link, {})
            if new is not None and link in self._links(ns, new):
                pods[name] = new
            else:
                pods.pop(name, None)
            if not pods:
                self.pods_by_link.pop(link, None)
            plural = link[0]
            self.dirty_jobs.update((plural, ns, job) for job in self.jobs_by_link.get(link, ()))

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
                    for plural, kind in JOB_KINDS.items()
                    for (ns, name), obj in self.objects[plural].items()
                    if kind.own(obj)
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
        plural, ns, name = key
        kind = JOB_KINDS[plural]
        obj = self.objects[plural].get((ns, name))
        if obj is None or not kind.own(obj):
            return []
        jid = f"k8s/{ns}/{name}"
        link = kind.link(obj)
        pods = list(self.pods_by_link.get((plural, ns, link), {}).values()) if link else []
        seen = kind.observe(obj, pods)
        events, entry = self.tracker.observe(jid, seen, self._submitted(kind.kind, obj))
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
        facts, entry = self.tracker.node_facts(
            key, name, _facts(node, self.settings.switch_label), entry
        )
        return await self.tracker.commit(self.sink, key, [*events, *facts], entry)


def _facts(node: Obj, switch_label: str) -> NodeFactsObservedPayload:
    """What Kubernetes says the node is: its labels (node groups select by them), the first
    MAP_ENTRIES by key where a node has more, and the leaf switch `switch_label` names."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    switch = labels.get(switch_label)
    return NodeFactsObservedPayload(
        labels={k[:MAP_KEY]: str(v)[:TEXT] for k, v in sorted(labels.items())[:MAP_ENTRIES]},
        switch=str(switch)[:NAME] if switch else None,
    )


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
