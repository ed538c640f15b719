"""The interface every scheduler adapter implements, and the registry that names them.

An adapter turns a scheduler-agnostic request (requeue this job from that checkpoint, drain these
nodes) into the scheduler's own calls, and returns a small dict saying what it did; that dict is
the `detail` of `ActionSucceeded`. Adapters raise `actions.errors.TemporaryError` when trying again
may help and `PermanentError` when it cannot.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar


@dataclass(frozen=True)
class RunResult:
    """What a command pinned to nodes left behind."""

    exit_code: int
    stdout: str
    stderr: str = ""
    job_id: str | None = None


class SchedulerAdapter(Protocol):
    name: str

    def requeue(
        self, job_id: str, *, checkpoint_uri: str | None, exclude: Sequence[str] = ()
    ) -> dict[str, Any]:
        """Run the job again, resuming from `checkpoint_uri`, never on the nodes in `exclude`
        (PermanentError when too few nodes would be left for it: it is not requeued)."""
        ...

    def cancel(self, job_id: str, *, reason: str) -> dict[str, Any]:
        """End the job for good (no requeue); a job already over is not an error."""
        ...

    def release(self, job_id: str) -> dict[str, Any]:
        """Let a job that is held (submitted, waiting for a follow-up's go) start."""
        ...

    def signal(self, job_id: str, *, signal: str) -> dict[str, Any]:
        """Send `signal` (`USR1`, `TERM`, …) to the running job's processes: the hook a job
        honours by writing a checkpoint (docs/jobs.md). PermanentError when the job is not
        running or the scheduler cannot deliver a signal."""
        ...

    def drain(self, nodes: Sequence[str], *, reason: str) -> dict[str, Any]:
        """Stop new work landing on `nodes` (running work may finish)."""
        ...

    def resume(self, nodes: Sequence[str]) -> dict[str, Any]:
        """Undo `drain`."""
        ...

    def taint(self, nodes: Sequence[str], *, key: str, reason: str) -> dict[str, Any]:
        """Mark `nodes` so only tolerating work runs there (a no-op where schedulers lack it)."""
        ...

    def untaint(self, nodes: Sequence[str], *, key: str) -> dict[str, Any]: ...

    def reboot(self, nodes: Sequence[str], *, reason: str) -> dict[str, Any]:
        """Ask the scheduler to reboot drained `nodes`; returns once it took the request (the
        reboot is done when the scheduler shows them back, which its watcher reports)."""
        ...

    def run_on_nodes(
        self,
        nodes: Sequence[str],
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        timeout_s: float,
    ) -> RunResult:
        """Run `command` once per node on exactly `nodes`, wait, and return its output."""
        ...

    def job_logs(self, job_id: str, *, tail_lines: int = 200) -> str: ...


A = TypeVar("A", bound=Callable[[], SchedulerAdapter])

_ADAPTERS: dict[str, Callable[[], SchedulerAdapter]] = {}

# Adapters live in their own modules; importing one registers it. Keyed by the settings name.
_MODULES = {
    "memory": "actions.adapters.memory",
    "slurm": "actions.adapters.slurm",
    "ray": "actions.adapters.ray",
    "kubernetes": "actions.adapters.kubernetes",
}


def adapter(name: str) -> Callable[[A], A]:
    """Register a zero-argument factory (usually the class; it reads its own settings)."""

    def register(factory: A) -> A:
        _ADAPTERS[name] = factory
        return factory

    return register


def make_adapter(name: str) -> SchedulerAdapter:
    if name not in _ADAPTERS and name in _MODULES:
        try:
            importlib.import_module(_MODULES[name])
        except ImportError as exc:
            raise ValueError(
                f"scheduler adapter {name!r} needs {exc.name!r}: pip install 'centrality[{name}]'"
            ) from exc
    try:
        return _ADAPTERS[name]()
    except KeyError:
        raise ValueError(f"unknown scheduler adapter {name!r}; known: {sorted(_MODULES)}") from None
