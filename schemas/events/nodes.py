"""Node liveness and health; `subject` is the node id."""

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field

from schemas.envelope import Event, Payload
from schemas.registry import event


class NodeHeartbeatPayload(Payload):
    agent_version: str
    gpus: int = Field(ge=0, description="GPUs the agent sees (0 without NVML).")
    uptime_s: float | None = Field(default=None, ge=0)
    interval_s: float = Field(gt=0, description="When to expect the next heartbeat.")


@event(topic="nodes")
class NodeHeartbeat(Event):
    type: Literal["NodeHeartbeat"] = "NodeHeartbeat"
    payload: NodeHeartbeatPayload


class HealthStatus(StrEnum):
    OK = "OK"
    WARN = "WARN"
    CRITICAL = "CRITICAL"
    UNKNOWN = "UNKNOWN"


class NodeHealthCheckedPayload(Payload):
    check: str = Field(min_length=1)
    status: HealthStatus
    message: str = ""
    details: dict[str, Any] = Field(default_factory=dict)
    duration_ms: float | None = Field(default=None, ge=0)


@event(topic="nodes")
class NodeHealthChecked(Event):
    type: Literal["NodeHealthChecked"] = "NodeHealthChecked"
    payload: NodeHealthCheckedPayload
