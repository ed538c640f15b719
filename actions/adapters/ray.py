"""Ray through its Job Submission API (the dashboard address).

- requeue `ray/<submission_id>`: stop the job if it still runs, then submit it again (same
  entrypoint, runtime_env, metadata) with env `CENTRALITY_RESUME_FROM=<checkpoint>`; the new
  submission id is `<original>-r<N>`, returned as `job_id`, its metadata names the original.
  Ray's Job API does not report a job's entrypoint resources (num_cpus/gpus), so the
  resubmission asks for none: put GPU needs in the job's own tasks.
- run_on_nodes: a node is named by its IP; one job per node pinned by the entrypoint resource
  `node:<ip>` Ray gives every node. Only the driver (the command) is pinned: tasks it starts may
  run elsewhere.
- signal: the Job API only stops a job (SIGINT, then SIGTERM, then SIGKILL to its driver):
  PermanentError; a Ray job checkpoints at its own cadence.
- drain/resume: not offered by the Job API: PermanentError. taint/untaint: no-ops (Ray has none).
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from ray.job_submission import JobStatus, JobSubmissionClient

from actions.adapters.base import RunResult, adapter
from actions.adapters.jobids import parse_job_id
from actions.adapters.settings import RaySettings
from actions.errors import PermanentError, TemporaryError

RESUME_ENV = "CENTRALITY_RESUME_FROM"
T = TypeVar("T")


@contextmanager
def _classified(what: str) -> Iterator[None]:
    try:
        yield
    except (ConnectionError, TimeoutError) as e:
        raise TemporaryError(f"{what}: Ray unreachable: {e}") from e
    except RuntimeError as e:
        # The client raises RuntimeError("Request failed with status code N: ...").
        status = re.search(r"status code (\d+)", str(e))
        temporary = status is not None and status.group(1).startswith("5")
        raise (TemporaryError if temporary else PermanentError)(f"{what}: {e}") from e


@adapter("ray")
class RayAdapter:
    name = "ray"

    def __init__(self, settings: RaySettings | None = None) -> None:
        self.settings = settings or RaySettings()

    def requeue(
        self, job_id: str, *, checkpoint_uri: str | None, exclude: Sequence[str] = ()
    ) -> dict[str, Any]:
        (old,) = parse_job_id(job_id, "ray", 1)
        jobs = self._client()
        info = self._call("job info", jobs.get_job_info, old)
        if not info.status.is_terminal():
            self._call("stop job", jobs.stop_job, old)
            self._wait(jobs, old, self.settings.stop_timeout_s)
        runtime_env = dict(info.runtime_env or {})
        env_vars = {k: v for k, v in (runtime_env.get("env_vars") or {}).items() if k != RESUME_ENV}
        if checkpoint_uri is not None:
            env_vars[RESUME_ENV] = checkpoint_uri
        runtime_env["env_vars"] = env_vars
        metadata = dict(info.metadata or {})
        original = metadata.setdefault("centrality_requeued_from", old)
        attempt = int(metadata.get("centrality_requeues", "0")) + 1
        metadata["centrality_requeues"] = str(attempt)
        new = self._call(
            "submit job",
            jobs.submit_job,
            entrypoint=info.entrypoint,
            submission_id=f"{original}-r{attempt}",
            runtime_env=runtime_env,
            metadata=metadata,
        )
        return {
            "scheduler": self.name,
            "job_id": f"ray/{new}",
            "requeued": job_id,
            "checkpoint_uri": checkpoint_uri,
            "action": "resubmitted",
            # Ray places a job's tasks by resources, not node names: nothing to exclude by.
            "not_excluded": sorted(exclude),
        }

    def reboot(self, nodes: Sequence[str], *, reason: str) -> dict[str, Any]:
        raise PermanentError(
            "the Ray adapter does not reboot nodes (docs/remediation.md): escalate instead"
        )

    def cancel(self, job_id: str, *, reason: str) -> dict[str, Any]:
        (submission,) = parse_job_id(job_id, "ray", 1)
        stopped = self._call("stop job", self._client().stop_job, submission)
        return {
            "scheduler": self.name,
            "job_id": job_id,
            "action": "stopped",
            "was_running": stopped,
        }

    def release(self, job_id: str) -> dict[str, Any]:
        raise PermanentError("Ray jobs cannot be held, so there is nothing to release")

    def signal(self, job_id: str, *, signal: str) -> dict[str, Any]:
        raise PermanentError(
            f"Ray's Job API cannot send {signal} to {job_id} (it only stops jobs): let the "
            "job checkpoint at its own cadence"
        )

    def drain(self, nodes: Sequence[str], *, reason: str) -> dict[str, Any]:
        raise PermanentError("the Ray adapter cannot drain nodes (no Job API for it)")

    def resume(self, nodes: Sequence[str]) -> dict[str, Any]:
        raise PermanentError("the Ray adapter cannot resume nodes (no Job API for it)")

    def taint(self, nodes: Sequence[str], *, key: str, reason: str) -> dict[str, Any]:
        return {"scheduler": self.name, "tainted": [], "key": key, "noop": "Ray has no taints"}

    def untaint(self, nodes: Sequence[str], *, key: str) -> dict[str, Any]:
        return {"scheduler": self.name, "untainted": [], "key": key, "noop": "Ray has no taints"}

    def run_on_nodes(
        self,
        nodes: Sequence[str],
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        timeout_s: float,
    ) -> RunResult:
        jobs = self._client()
        ids = [
            self._call(
                "submit job",
                jobs.submit_job,
                entrypoint=shlex.join(command),
                runtime_env={"env_vars": dict(env)},
                entrypoint_resources={f"node:{node}": 0.001},
                metadata={"centrality_run_on": node},
            )
            for node in nodes
        ]
        deadline = time.monotonic() + timeout_s
        try:
            infos = [self._wait(jobs, i, max(0.0, deadline - time.monotonic())) for i in ids]
        except TemporaryError:
            for i in ids:
                self._call("stop job", jobs.stop_job, i)
            raise
        codes = [_exit_code(info) for info in infos]
        return RunResult(
            exit_code=next((c for c in codes if c != 0), 0),
            stdout="".join(self._call("job logs", jobs.get_job_logs, i) for i in ids),
            job_id=f"ray/{ids[0]}",
        )

    def job_logs(self, job_id: str, *, tail_lines: int = 200) -> str:
        (submission,) = parse_job_id(job_id, "ray", 1)
        logs = str(self._call("job logs", self._client().get_job_logs, submission))
        return "".join(logs.splitlines(keepends=True)[-tail_lines:])

    def _client(self) -> JobSubmissionClient:
        # The constructor already talks to the cluster; unreachable is temporary.
        with _classified("connect"):
            return JobSubmissionClient(self.settings.address)

    def _call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with _classified(what):
            return fn(*args, **kwargs)

    def _wait(self, jobs: JobSubmissionClient, submission: str, timeout_s: float) -> Any:
        deadline = time.monotonic() + timeout_s
        while True:
            info = self._call("job info", jobs.get_job_info, submission)
            if info.status.is_terminal():
                return info
            if time.monotonic() >= deadline:
                raise TemporaryError(f"Ray job {submission} still {info.status}")
            time.sleep(self.settings.poll_interval_s)


def _exit_code(info: Any) -> int:
    if info.status == JobStatus.SUCCEEDED:
        return 0
    code = getattr(info, "driver_exit_code", None)
    return int(code) if code else 1
