"""Slurm's job state words in the contract's terms: the one table the Slurm watcher and the Slurm
adapter share.

The 24 words are those of squeue(1), section JOB STATE CODES, identical in Slurm 22.05 and 24.11
(tests/fixtures/realworld/slurm/job-state-codes.txt). Twelve are base states and twelve are flags
set on top of one; Slurm prints a single word by giving the flags precedence in the order of
`job_state_string()` (src/common/slurm_protocol_defs.c), which is what 22.05's JSON and
`scontrol show job` print, while 23.02+ JSON lists the base state followed by its flags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from schemas.events.jobs import JobState

# Centrality's maintenance windows: the reservations the Slurm adapter opens to run a benchmark
# or a GPU reset on drained nodes (they are resumed inside it), named so. The watcher reports a
# node inside one as Centrality's drained node it still is, not as a node back in service.
WINDOW_PREFIX = "centrality-"


@dataclass(frozen=True)
class SlurmJobWord:
    state: JobState
    why: str
    requeue: bool = False  # this attempt ended, the job goes on under the same id


_P, _R = JobState.PENDING, JobState.RUNNING
SLURM_JOB_STATES: Mapping[str, SlurmJobWord] = MappingProxyType(
    {
        # Waiting: no attempt is running.
        "PENDING": SlurmJobWord(_P, "awaiting resources"),
        "CONFIGURING": SlurmJobWord(_P, "allocated, nodes still booting: no user code runs yet"),
        "RESV_DEL_HOLD": SlurmJobWord(_P, "held after its reservation was deleted"),
        "SUSPENDED": SlurmJobWord(_P, "allocation kept, execution suspended; resumes as is"),
        "STOPPED": SlurmJobWord(_P, "allocation kept, execution stopped by SIGSTOP"),
        # Requeues: the attempt ended (restart count +1), the job waits for its next one.
        "REQUEUED": SlurmJobWord(_P, "requeued: this attempt ended", requeue=True),
        "REQUEUE_HOLD": SlurmJobWord(_P, "requeued and held", requeue=True),
        "REQUEUE_FED": SlurmJobWord(_P, "requeued by a federation", requeue=True),
        "SPECIAL_EXIT": SlurmJobWord(_P, "requeued and held on a special exit", requeue=True),
        # An attempt holds its nodes.
        "RUNNING": SlurmJobWord(_R, "running"),
        "RESIZING": SlurmJobWord(_R, "running, its allocation changes size"),
        "SIGNALING": SlurmJobWord(_R, "running, being signalled (e.g. before its time limit)"),
        "COMPLETING": SlurmJobWord(_R, "ending: processes still cleaned up on its nodes"),
        "STAGE_OUT": SlurmJobWord(_R, "ending: burst buffer stage-out still running"),
        # The attempt ended for good.
        "COMPLETED": SlurmJobWord(JobState.SUCCEEDED, "all processes exited 0"),
        "FAILED": SlurmJobWord(JobState.FAILED, "non-zero exit code or other failure"),
        "OUT_OF_MEMORY": SlurmJobWord(JobState.FAILED, "a task was killed for memory"),
        "TIMEOUT": SlurmJobWord(JobState.FAILED, "killed at its time limit"),
        "DEADLINE": SlurmJobWord(JobState.FAILED, "ended at its --deadline"),
        "NODE_FAIL": SlurmJobWord(JobState.FAILED, "one of its nodes failed"),
        "BOOT_FAIL": SlurmJobWord(JobState.FAILED, "its nodes failed to boot"),
        "PREEMPTED": SlurmJobWord(JobState.PREEMPTED, "ended by preemption (not a failure)"),
        "CANCELLED": SlurmJobWord(JobState.CANCELLED, "cancelled by a user or an admin"),
        "REVOKED": SlurmJobWord(JobState.CANCELLED, "federation sibling removed: runs elsewhere"),
    }
)

# Flags before base states, in job_state_string()'s order.
_PRECEDENCE = (
    "COMPLETING",
    "STAGE_OUT",
    "CONFIGURING",
    "RESIZING",
    "REQUEUED",
    "REQUEUE_FED",
    "REQUEUE_HOLD",
    "SPECIAL_EXIT",
    "STOPPED",
    "REVOKED",
    "RESV_DEL_HOLD",
    "SIGNALING",
)
# Words that end an attempt for good: what a caller waiting for a job's end waits for.
SLURM_FINISHED = frozenset(
    w
    for w, m in SLURM_JOB_STATES.items()
    if m.state in (JobState.SUCCEEDED, JobState.FAILED, JobState.PREEMPTED, JobState.CANCELLED)
)


def slurm_job_word(value: str | Sequence[str] | None) -> str:
    """The one word Slurm itself prints for a job state: from 22.05's string (`CANCELLED by 0`,
    sacct's `CANCELLED+`) or 23.02+'s list (`["PENDING", "REQUEUED"]`)."""
    words = [str(w).upper() for w in value] if isinstance(value, list | tuple) else []
    if isinstance(value, str):
        words = [value.split()[0].rstrip("+").upper()] if value.strip() else []
    for flag in _PRECEDENCE:
        if flag in words:
            return flag
    return words[0] if words else "UNKNOWN"


def slurm_job_state(word: str) -> JobState:
    known = SLURM_JOB_STATES.get(word)
    return known.state if known else JobState.UNKNOWN


# sinfo(1), NODE STATE CODES: a character after a state stands for a flag
# (tests/fixtures/realworld/slurm/22.05/node-state-codes.txt); `scontrol show node` prints `*`.
SLURM_NODE_SUFFIXES: Mapping[str, str] = MappingProxyType(
    {
        "*": "NOT_RESPONDING",
        "~": "POWERED_DOWN",
        "#": "POWERING_UP",
        "!": "POWER_DOWN",
        "%": "POWERING_DOWN",
        "$": "MAINTENANCE",
        "@": "REBOOT_REQUESTED",
        "^": "REBOOT_ISSUED",
        "-": "PLANNED",
    }
)
# sinfo's own names (long `%T` and short `%t`) for a base state with its flags; a busy node is
# written ALLOCATED here, which is all the contract needs to know of it.
_SINFO_NAMES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "ALLOC": ("ALLOCATED",),
        "ALLOCATED+": ("ALLOCATED", "COMPLETING"),
        "MIX": ("MIXED",),
        "COMP": ("COMPLETING",),
        "DRAINED": ("IDLE", "DRAIN"),
        "DRAIN": ("IDLE", "DRAIN"),
        "DRAINING": ("ALLOCATED", "DRAIN"),
        "DRNG": ("ALLOCATED", "DRAIN"),
        "FAILING": ("ALLOCATED", "FAIL"),
        "FAILG": ("ALLOCATED", "FAIL"),
        "MAINT": ("MAINTENANCE",),
        "RESV": ("RESERVED",),
        "INVAL": ("INVALID",),
        "PLND": ("PLANNED",),
        "FUTR": ("FUTURE",),
        "UNK": ("UNKNOWN",),
        "NPC": ("PERFCTRS",),
        "POW_DN": ("POWERED_DOWN",),
        "POW_UP": ("POWERING_UP",),
    }
)


def slurm_node_words(value: str) -> tuple[str, ...]:
    """A node state as Slurm prints it (`DOWN*+DRAIN`, sinfo's `idle~`, `drng`, `ALLOCATED+`)
    as its base state and flags in Slurm's long words (`DOWN`, `NOT_RESPONDING`, `DRAIN`)."""
    words: list[str] = []
    for i, token in enumerate(value.strip().upper().split("+")):
        if not token:
            if words:  # a trailing `+` (sinfo's ALLOCATED+): jobs still completing
                words.append("COMPLETING")
            continue
        flags = []
        while token and token[-1] in SLURM_NODE_SUFFIXES:
            flags.append(SLURM_NODE_SUFFIXES[token[-1]])
            token = token[:-1]
        # sinfo's names stand for the base state only; after a `+` come scontrol's flag words.
        base = _SINFO_NAMES.get(token, (token,)) if i == 0 else (token,)
        words += [*base, *reversed(flags)]
    return tuple(dict.fromkeys(words))
