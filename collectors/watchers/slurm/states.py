"""Slurm's words for job states, exits and node states, in scheduler-agnostic terms."""

from __future__ import annotations

from typing import Any

from schemas.events.jobs import JobState
from schemas.events.nodes import HealthStatus

_JOB_STATES = {
    JobState.PENDING: {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING"},
    JobState.RUNNING: {"RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT", "RESIZING", "SUSPENDED"},
    JobState.SUCCEEDED: {"COMPLETED"},
    JobState.FAILED: {
        "FAILED",
        "NODE_FAIL",
        "BOOT_FAIL",
        "OUT_OF_MEMORY",
        "TIMEOUT",
        "DEADLINE",
        "SPECIAL_EXIT",
    },
    JobState.CANCELLED: {"CANCELLED", "REVOKED"},
    JobState.PREEMPTED: {"PREEMPTED"},
}
_BY_RAW = {raw: state for state, raws in _JOB_STATES.items() for raw in raws}


def raw_state(value: Any) -> str:
    """22.05 gives a string, newer releases a list of flags with the base state first."""
    if isinstance(value, list):
        return str(value[0]) if value else "UNKNOWN"
    return str(value).split()[0] if value else "UNKNOWN"


def job_state(raw: str) -> JobState:
    return _BY_RAW.get(raw.split()[0].rstrip("+"), JobState.UNKNOWN)


def exit_of(value: Any) -> tuple[int | None, int | None]:
    """(exit code, signal) from squeue's raw wait status (22.05) or its newer object form."""
    if isinstance(value, dict):
        code = value.get("return_code")
        signal = (value.get("signal") or {}).get("id")
        code = code.get("number") if isinstance(code, dict) else code
        signal = signal.get("number") if isinstance(signal, dict) else signal
        return (int(code) if code is not None else None, int(signal) or None if signal else None)
    if value is None:
        return None, None
    status = int(value)
    if status & 0x7F:
        return None, status & 0x7F
    return (status >> 8) & 0xFF, None


def node_health(state: str, flags: list[str]) -> HealthStatus:
    words = {state.upper(), *(f.upper() for f in flags)}
    if words & {"DOWN", "FAIL", "FAILING", "NOT_RESPONDING", "INVALID"}:
        return HealthStatus.CRITICAL
    if words & {"DRAIN", "DRAINED", "DRAINING", "MAINTENANCE", "REBOOT_REQUESTED"}:
        return HealthStatus.WARN
    return HealthStatus.OK
