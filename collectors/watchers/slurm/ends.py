"""How a job's attempts ended, from Slurm's records: accounting (`sacct --json -D`, slurmdbd) or
the job completion log (`sacct -c`, JobCompType=jobcomp/filetxt). One record per attempt, oldest
first, so they tell how attempts ended that squeue never showed ending."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from collectors.watchers.slurm.states import exit_of, expand, number
from schemas.events.jobs import JobState
from schemas.slurm import slurm_job_state, slurm_job_word

JOBCOMP_FIELDS = ("JobID", "State", "ExitCode", "NodeList", "End")
JOBCOMP_ARGV = ("sacct", "-c", "-P", "-n", f"--format={','.join(JOBCOMP_FIELDS)}")
SACCT_ARGV = ("sacct", "--json", "-D")  # -D: every attempt of a requeued job, not the last
_ENDED = {JobState.SUCCEEDED, JobState.FAILED, JobState.PREEMPTED, JobState.CANCELLED}


@dataclass(frozen=True)
class AttemptEnd:
    raw_state: str
    exit_code: int | None
    signal: int | None
    nodes: tuple[str, ...]
    at: datetime

    @property
    def state(self) -> JobState:
        return slurm_job_state(self.raw_state)

    @property
    def ended(self) -> bool:
        """False for a requeue's record (REQUEUED; jobcomp says PENDING): the job went on."""
        return self.state in _ENDED


def from_sacct(doc: dict[str, Any]) -> dict[str, list[AttemptEnd]]:
    """Slurm job id → the ends of its attempts, from 22.05's or 23.02+'s `sacct --json`."""
    found: dict[str, list[tuple[int, AttemptEnd]]] = defaultdict(list)
    for job in doc.get("jobs") or []:
        times = job.get("time") or {}
        code, signal = exit_of(job.get("exit_code"))
        end = AttemptEnd(
            raw_state=slurm_job_word((job.get("state") or {}).get("current")),
            exit_code=code,
            signal=signal,
            nodes=expand(job.get("nodes")),
            at=datetime.fromtimestamp(number(times.get("end")) or 0, UTC),
        )
        found[str(number(job.get("job_id")))].append((number(times.get("start")) or 0, end))
    return {
        job: [end for _, end in sorted(ends, key=lambda e: e[0])] for job, ends in found.items()
    }


def from_jobcomp(out: str) -> dict[str, list[AttemptEnd]]:
    """Slurm job id → the ends of its attempts, from `sacct -c -P` lines (in order of ending)."""
    found: dict[str, list[AttemptEnd]] = defaultdict(list)
    for line in out.splitlines():
        record = dict(zip(JOBCOMP_FIELDS, line.split("|"), strict=False))
        if len(record) < len(JOBCOMP_FIELDS):
            continue
        code, _, signal = record["ExitCode"].partition(":")
        found[record["JobID"]].append(
            AttemptEnd(
                raw_state=slurm_job_word(record["State"]),
                exit_code=int(code) if code.isdigit() else None,
                signal=int(signal) or None if signal.isdigit() else None,
                nodes=expand(record["NodeList"]),
                at=datetime.fromisoformat(record["End"]).astimezone(UTC),
            )
        )
    return dict(found)
