"""Kubernetes watcher: lists Jobs, Kubeflow PyTorchJobs, Pods and Nodes every `poll_s`.

It reconciles by listing rather than streaming watches: a poll sees the latest state after any
gap (restart, API hiccup) without resourceVersion bookkeeping, and the ledger turns the
differences into events. The client is the official, blocking one, run in a thread.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from collectors.events import Stamp
from collectors.loop import poll_forever
from collectors.sink import EventSink
from collectors.watchers.hooks import ANNOTATION, parse_hooks
from collectors.watchers.k8s.objects import (
    JOB_NAME_LABELS,
    PYTORCHJOB_LABELS,
    job_observation,
    pods_of,
    pytorchjob_observation,
)
from collectors.watchers.k8s.settings import K8sWatchSettings
from collectors.watchers.ledger import Ledger
from collectors.watchers.lifecycle import JobTracker
from schemas.envelope import Event
from schemas.events.jobs import JobSubmittedPayload
from schemas.events.nodes import HealthStatus

log = structlog.get_logger(__name__)

NODE_CHECK = "k8s_node_state"


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
        self._no_pytorchjobs = False

    async def run(self, stop: asyncio.Event) -> None:
        await poll_forever(self.poll_once, self.settings.poll_s, stop, "k8s")

    async def poll_once(self) -> list[Event]:
        pods, jobs, pytorchjobs, nodes = await asyncio.to_thread(self._list_all)
        by_ns: dict[str, list[dict[str, Any]]] = {}
        for pod in pods:
            by_ns.setdefault(pod["metadata"].get("namespace", "default"), []).append(pod)
        sent: list[Event] = []
        present: set[str] = set()
        for kind, objs, labels, observe in (
            ("Job", jobs, JOB_NAME_LABELS, job_observation),
            ("PyTorchJob", pytorchjobs, PYTORCHJOB_LABELS, pytorchjob_observation),
        ):
            for obj in objs:
                meta = obj["metadata"]
                ns, name = meta.get("namespace", "default"), meta["name"]
                jid = f"k8s/{ns}/{name}"
                present.add(jid)
                seen = observe(obj, pods_of(by_ns.get(ns, []), name, labels))
                submitted = self._submitted(kind, obj)
                events, entry = self.tracker.observe(jid, seen, submitted)
                sent += await self.tracker.commit(self.sink, jid, events, entry)
        self.tracker.forget_ended("k8s/", present)
        for node in nodes:
            sent += await self._node(node)
        self.ledger.save()
        return sent

    def _submitted(self, kind: str, obj: dict[str, Any]) -> JobSubmittedPayload:
        meta = obj["metadata"]
        return JobSubmittedPayload(
            name=meta["name"],
            queue=meta.get("namespace", "default"),
            raw={"kind": kind, "uid": str(meta.get("uid") or "")},
            hooks=parse_hooks(
                (meta.get("annotations") or {}).get(ANNOTATION), job=str(meta["name"])
            ),
        )

    async def _node(self, node: dict[str, Any]) -> list[Event]:
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

    def _list_all(
        self,
    ) -> tuple[
        list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]
    ]:
        core, batch = client.CoreV1Api(self.api), client.BatchV1Api(self.api)
        ns = self.settings.namespace
        if ns is None:
            pods = core.list_pod_for_all_namespaces()
            jobs = batch.list_job_for_all_namespaces()
        else:
            pods = core.list_namespaced_pod(ns)
            jobs = batch.list_namespaced_job(ns)
        nodes = core.list_node()
        plain = self.api.sanitize_for_serialization
        return (
            plain(pods)["items"],
            plain(jobs)["items"],
            self._pytorchjobs(),
            plain(nodes)["items"],
        )

    def _pytorchjobs(self) -> list[dict[str, Any]]:
        if self._no_pytorchjobs:
            return []
        custom = client.CustomObjectsApi(self.api)
        args = ("kubeflow.org", "v1")
        try:
            if self.settings.namespace is None:
                doc = custom.list_cluster_custom_object(*args, "pytorchjobs")
            else:
                doc = custom.list_namespaced_custom_object(
                    *args, self.settings.namespace, "pytorchjobs"
                )
        except ApiException as exc:
            if exc.status != 404:
                raise
            log.info("k8s_no_pytorchjobs", detail="the Kubeflow training operator is not installed")
            self._no_pytorchjobs = True
            return []
        return list(doc.get("items") or [])
