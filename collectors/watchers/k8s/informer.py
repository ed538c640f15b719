"""List once, then watch: one kind of object kept current from the API's watch stream.

The informer pattern of client-go, on the official (blocking) Python client, in a thread:

- a paged LIST gives every object and the collection's resourceVersion;
- a WATCH from that resourceVersion streams ADDED / MODIFIED / DELETED (and BOOKMARK, which
  only moves the resourceVersion on); when the server ends the watch (`timeout_s`) it is
  resumed from the last resourceVersion seen, so nothing is listed again;
- 410 Gone (the resourceVersion is older than the server keeps) is the one reason to LIST
  again: the new list replaces what was known, and what it no longer holds is reported deleted;
- other failures (API server away, 5xx) wait with jittered exponential backoff, then resume.

Objects stay plain dicts as the server sent them: nothing is deserialised into models.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog
import urllib3
from kubernetes import watch
from kubernetes.client.exceptions import ApiException
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_when_event_set,
    wait_exponential_jitter,
)

log = structlog.get_logger(__name__)

GONE = 410
# Worth trying again: the API server's refusals other than 410, its absence, a torn stream.
_TRANSIENT = (ApiException, urllib3.exceptions.HTTPError, OSError, ValueError)

Key = tuple[str, str]  # (namespace, name); "" for cluster-scoped objects
Obj = dict[str, Any]


def brief(exc: BaseException | None) -> str:
    """The API's own message for a refusal (not the client's dump of headers), else the error."""
    if isinstance(exc, ApiException):
        try:
            message = json.loads(exc.body or "{}").get("message")
        except (ValueError, AttributeError):
            message = None
        return f"HTTP {exc.status} {exc.reason}: {message or exc.body or ''}"[:500]
    return str(exc)[:500]


@dataclass(frozen=True)
class Delta:
    """What one informer learned: changed objects (None: deleted). `resync` is a full LIST:
    the first one means the kind is known completely."""

    kind: str
    changes: tuple[tuple[Key, Obj | None], ...]
    resync: bool = False


def key_of(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta["name"])


@dataclass
class Informer:
    kind: str
    list_fn: Callable[..., Any]
    deliver: Callable[[Delta], None]
    stopped: threading.Event
    timeout_s: int = 300
    backoff_max_s: float = 30.0
    page_size: int = 500
    known: set[Key] = field(default_factory=set)
    resource_version: str | None = None

    def run(self) -> None:
        """Thread body: until `stopped`, LIST when needed and WATCH from where it left off."""
        retrying = Retrying(
            wait=wait_exponential_jitter(initial=0.5, max=self.backoff_max_s),
            retry=retry_if_exception_type(_TRANSIENT),
            stop=stop_when_event_set(self.stopped),
            sleep=self._pause,
            before_sleep=self._failed,
            retry_error_callback=lambda _: None,
        )
        while not self.stopped.is_set():
            retrying(self._step)

    def _step(self) -> None:
        try:
            if self.resource_version is None:
                self.relist()
            self.watch_once()
        except ApiException as exc:
            if exc.status != GONE:
                raise
            log.info("k8s_watch_expired", kind=self.kind, detail="listing again")
            self.resource_version = None

    def relist(self) -> None:
        items: dict[Key, Obj] = {}
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"limit": self.page_size, "_preload_content": False}
            if token:
                kwargs["_continue"] = token
            page = json.loads(self.list_fn(**kwargs).data)
            for obj in page.get("items") or []:
                items[key_of(obj)] = obj
            meta = page.get("metadata") or {}
            token = meta.get("continue")
            if not token:
                break
        gone = tuple((key, None) for key in self.known - set(items))
        self.known = set(items)
        self.resource_version = str(meta.get("resourceVersion") or "") or None
        changes: tuple[tuple[Key, Obj | None], ...] = (*items.items(), *gone)
        self.deliver(Delta(self.kind, changes, resync=True))

    def watch_once(self) -> None:
        """One watch request, until the server ends it (`timeout_s`) or `stopped`."""
        stream = watch.Watch(return_type="object")
        for event in stream.stream(
            self.list_fn,
            resource_version=self.resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=self.timeout_s,
            _request_timeout=(10, self.timeout_s + 30),
        ):
            obj = event["raw_object"]
            version = (obj.get("metadata") or {}).get("resourceVersion")
            if version:
                self.resource_version = str(version)
            if event["type"] != "BOOKMARK":
                key = key_of(obj)
                if event["type"] == "DELETED":
                    self.known.discard(key)
                    self.deliver(Delta(self.kind, ((key, None),)))
                else:
                    self.known.add(key)
                    self.deliver(Delta(self.kind, ((key, obj),)))
            if self.stopped.is_set():
                stream.stop()

    def _failed(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        status = exc.status if isinstance(exc, ApiException) else None
        if status in (403, 404) and self.resource_version is None:
            # A kind the cluster does not serve (its operator not installed), or that this
            # identity may not list (RBAC): empty until that changes, asked again with the
            # backoff. The other kinds are followed meanwhile.
            if state.attempt_number == 1:
                say = log.info if status == 404 else log.warning
                say("k8s_kind_unavailable", kind=self.kind, status=status, error=brief(exc))
                self.deliver(Delta(self.kind, (), resync=True))
            return
        if status == 404:
            self.resource_version = None  # the kind went away (a CRD removed): list it again
        log.warning("k8s_watch_failed", kind=self.kind, status=status, error=brief(exc))

    def _pause(self, seconds: float) -> None:
        self.stopped.wait(seconds)  # a stop ends the pause at once
