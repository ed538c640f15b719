"""The kinds of job the Kubernetes watcher follows, one module each, registered by `job_kind`.

A kind says where the API serves it, which pod labels tie a pod to one of its jobs, and how to
read one job and its pods as an `Observation` (a pure function, proven on statuses captured from
real clusters in tests/fixtures/realworld/k8s/).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass

from collectors.watchers.k8s.objects import Obj
from collectors.watchers.lifecycle import Observation

Observe = Callable[[Obj, list[Obj]], Observation]


def _name(obj: Obj) -> str | None:
    return str((obj.get("metadata") or {}).get("name") or "") or None


def _always(obj: Obj) -> bool:
    return True


@dataclass(frozen=True)
class JobKind:
    kind: str
    group: str
    version: str
    plural: str
    pod_labels: tuple[str, ...]  # labels a pod of such a job carries, their value its `link`
    observe: Observe
    link: Callable[[Obj], str | None] = _name  # the value those labels carry for this job
    own: Callable[[Obj], bool] = _always  # False: a part of another kind's job, not a job


_KINDS: dict[str, JobKind] = {}


def job_kind(
    kind: str,
    *,
    api: str,
    plural: str,
    pod_labels: tuple[str, ...],
    link: Callable[[Obj], str | None] = _name,
    own: Callable[[Obj], bool] = _always,
) -> Callable[[Observe], Observe]:
    """Register `observe(job, pods)` for `kind`, served at `api` (`group/version`)."""
    group, version = api.split("/")

    def register(fn: Observe) -> Observe:
        existing = _KINDS.get(plural)
        if existing is not None and existing.observe is not fn:
            raise ValueError(f"job kind {kind} is registered twice")
        _KINDS[plural] = JobKind(kind, group, version, plural, pod_labels, fn, link, own)
        return fn

    return register


def job_kinds() -> dict[str, JobKind]:
    """Every kind this package holds, by plural."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
    return dict(_KINDS)
