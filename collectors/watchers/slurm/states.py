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
    """A Slurm hostlist (`gpu-[01-04]`, `rack[0-1]_blade[0-3]`) as Slurm expands it: in order,
    a name given twice kept twice (`scontrol show hostnames n[1-3],n2` is n1 n2 n3 n2)."""
    return tuple(hostlist.expand_hostlist(nodes, allow_duplicates=True)) if nodes else ()


# A node rebooting (`^`) is gone until it registers again.
_DOWN = {"DOWN", "ERROR", "INVALID_REG", "INVALID", "REBOOT_ISSUED"}
# sinfo(1): a node that stops answering goes DOWN "except in the case of COMPLETING, DRAINED,
# DRAINING, FAIL, FAILING nodes": those keep their state.
_NOT_RESPONDING = {"NOT_RESPONDING", "NO_RESPOND"}
_TAKES_NO_WORK = {"DRAIN", "FAIL"}  # admin (or a health check) keeps new jobs off
_BUSY = {"ALLOCATED", "MIXED", "COMPLETING"}
# A powered-down cloud node is available: Slurm powers it up on demand. So is one in a
# reservation, planned for a job, waiting to reboot (it runs work until then) or counting.
_AVAILABLE = {"IDLE", "ALLOCATED", "MIXED", "COMPLETING", "MAINTENANCE", "RESERVED", "PLANNED"}
_AVAILABLE |= {"POWERED_DOWN", "POWER_DOWN", "POWERING_UP", "POWERING_DOWN", "PERFCTRS"}
_AVAILABLE |= {"REBOOT_REQUESTED"}


def node_state(words: list[str]) -> SchedulerNodeState:
    """A node's base state and flags (`["MIXED", "DRAIN"]`, see `slurm_node_words`) as the
    scheduler-agnostic state."""
    upper = {w.upper() for w in words}
    if upper & _DOWN or (upper & _NOT_RESPONDING and not upper & _TAKES_NO_WORK):
        return SchedulerNodeState.DOWN
    if upper & _TAKES_NO_WORK:
        return SchedulerNodeState.DRAINING if upper & _BUSY else SchedulerNodeState.DRAINED
    if upper & _AVAILABLE:
        return SchedulerNodeState.AVAILABLE
    return SchedulerNodeState.UNKNOWN
