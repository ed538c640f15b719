"""Scheduler-qualified job ids (`slurm/<cluster>/<id>`, `ray/<id>`, `k8s/<ns>/<name>`)."""

from __future__ import annotations

from actions.errors import PermanentError


def parse_job_id(job_id: str, scheduler: str, parts: int) -> list[str]:
    """The `parts` fields after `<scheduler>/`; a foreign or malformed id is a PermanentError."""
    head, _, rest = job_id.partition("/")
    fields = rest.split("/", parts - 1) if rest else []
    if head != scheduler or len(fields) != parts or not all(fields):
        shape = "/".join([scheduler] + ["…"] * parts)
        raise PermanentError(f"{job_id!r} is not a {scheduler} job id ({shape})")
    return fields
