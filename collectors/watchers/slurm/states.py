"""Slurm's JSON (22.05 plain, 23.02+ with wrapped numbers and state lists) in contract terms."""

from __future__ import annotations

from typing import Any

import hostlist

from schemas.events.jobs import JobState
from schemas.events.nodes import SchedulerNodeState
from schemas.slurm import slurm_job_state, slurm_job_word


def number(value: Any) -> int | None:
    """22.05's plain numbers; 23.02+'s `{"set", "infinite", "number"}` (unset or infinite: None)."""
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite"):
            return None
        value = value.get("number")
    if value is None or isinstance(value, bool):
        return None
    return int(value)


def job_state(value: Any) -> tuple[str, JobState]:
    """(Slurm's own word, contract state). A job that a requeue sent back to PENDING is pending
    even while its old processes are still COMPLETING (23.02+ lists both; 22.05 shows only
    COMPLETING)."""
    word = slurm_job_word(value)
    if isinstance(value, list) and value and str(value[0]).upper() == "PENDING":
        return word, JobState.PENDING
    return word, slurm_job_state(word)


def exit_of(value: Any) -> tuple[int | None, int | None]:
    """(exit code, signal) from a raw wait status (22.05 plain, 23.02 wrapped as a number) or
    23.11+'s `{"status": [...], "return_code": N, "signal": {"id": N, "name": ...}}` (sacct's
    since 22.05)."""
    if isinstance(value, dict) and "number" not in value:
        signal = value.get("signal") or {}
        sig = (
            number(signal.get("id", signal.get("signal_id"))) if isinstance(signal, dict) else None
        )
        return number(value.get("return_code")), sig or None
    status = number(value)
    if status is None:
        return None, None
    if status & 0x7F:
        return None, status & 0x7F
    return (status >> 8) & 0xFF, None


def expand(nodes: str | None) -> tuple[str, ...]:
    """A Slurm hostlist (`gpu-[01-04]`, `rack[0-1]_blade[0-3]`) as Slurm expands it."""
    return tuple(hostlist.expand_hostlist(nodes)) if nodes else ()


_DOWN = {"DOWN", "ERROR", "NOT_RESPONDING", "NO_RESPOND", "INVALID_REG", "INVALID"}
_TAKES_NO_WORK = {"DRAIN", "FAIL"}  # admin (or a health check) keeps new jobs off
_BUSY = {"ALLOCATED", "MIXED", "COMPLETING"}
_AVAILABLE = {"IDLE", "ALLOCATED", "MIXED", "COMPLETING"}


def node_state(words: list[str]) -> SchedulerNodeState:
    """A node's base state and flags (`["MIXED", "DRAIN"]`) as the scheduler-agnostic state.
    A powered-down cloud node is available: Slurm powers it up on demand."""
    upper = {w.upper() for w in words}
    if upper & _DOWN:
        return SchedulerNodeState.DOWN
    if upper & _TAKES_NO_WORK:
        return SchedulerNodeState.DRAINING if upper & _BUSY else SchedulerNodeState.DRAINED
    if upper & (_AVAILABLE | {"POWERED_DOWN", "POWER_DOWN", "POWERING_UP", "POWERING_DOWN"}):
        return SchedulerNodeState.AVAILABLE
    return SchedulerNodeState.UNKNOWN
