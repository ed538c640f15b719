"""Slurm's job completion log (`sacct -c`, JobCompType=jobcomp/filetxt): one record per ended
attempt, in order, so it tells how attempts ended that squeue never showed ending."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime

from collectors.watchers.slurm.states import expand
from schemas.events.jobs import JobState
from schemas.slurm import slurm_job_state, slurm_job_word

FIELDS = ("JobID", "State", "ExitCode", "NodeList", "End")
ARGV = ("sacct", "-c", "-P", "-n", f"--format={','.join(FIELDS)}")
_ENDED = {JobState.SUCCEEDED, JobState.FAILED, JobState.PREEMPTED, JobState.CANCELLED}


@dataclass(frozen=True)
class AttemptEnd:
    raw_state: str
    state: JobState
    exit_code: int | None
    signal: int | None
    nodes: tuple[str, ...]
    at: datetime

    @property
    def ended(self) -> bool:
        """False for a requeue's record (`PENDING`/`REQUEUED`): the job went on."""
        return self.state in _ENDED


def parse(out: str) -> dict[str, list[AttemptEnd]]:
    """Slurm job id → the ends of its attempts, oldest first."""
    ends: dict[str, list[AttemptEnd]] = defaultdict(list)
    for line in out.splitlines():
        record = dict(zip(FIELDS, line.split("|"), strict=False))
        if len(record) < len(FIELDS):
            continue
        code, _, signal = record["ExitCode"].partition(":")
        raw = slurm_job_word(record["State"])
        ends[record["JobID"]].append(
            AttemptEnd(
                raw_state=raw,
                state=slurm_job_state(raw),
                exit_code=int(code) if code.isdigit() else None,
                signal=int(signal) or None if signal.isdigit() else None,
                nodes=expand(record["NodeList"]),
                at=datetime.fromisoformat(record["End"]).astimezone(UTC),
            )
        )
    return dict(ends)
