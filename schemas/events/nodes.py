"""Node liveness and health; `subject` is the node id."""

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from schemas.envelope import Event, Payload
from schemas.limits import (
    GPUS_PER_NODE,
    INT64_MAX,
    MAP_ENTRIES,
    NAME,
    NODE_NAME,
    SMALL_LIST,
    TEXT,
    WORD,
    Details,
    Key,
    Str,
)
from schemas.registry import event


class NodeEvent(Event):
    """An event about one node: its subject is the node's name, the same string node lists
    carry, so it is held to a node name's length (a longer one could never be named in a
    decision about the node)."""

    subject: str = Field(
        min_length=1, max_length=NODE_NAME, description="The node id; the partitioning key."
    )


class NodeHeartbeatPayload(Payload):
    agent_version: str = Field(max_length=NAME)
    gpus: int = Field(ge=0, le=GPUS_PER_NODE, description="GPUs the agent sees (0 without NVML).")
    uptime_s: float | None = Field(default=None, ge=0)
    interval_s: float = Field(gt=0, description="When to expect the next heartbeat.")


@event(topic="nodes")
class NodeHeartbeat(NodeEvent):
    type: Literal["NodeHeartbeat"] = "NodeHeartbeat"
    payload: NodeHeartbeatPayload


Name = Annotated[str, StringConstraints(max_length=NAME)]


class NodeFactsObservedPayload(Payload):
    """What a node is, for node groups and for people: from the agent (NVML) and from the
    scheduler's watcher. A field left None was not reported by this source (the node keeps what
    another said); an empty list was reported empty."""

    gpu_model: str | None = Field(default=None, max_length=NAME, description="e.g. NVIDIA H200.")
    gpu_count: int | None = Field(default=None, ge=0, le=GPUS_PER_NODE)
    gpu_memory_bytes: int | None = Field(default=None, ge=0, le=INT64_MAX, description="Per GPU.")
    driver_version: str | None = Field(default=None, max_length=WORD)
    cuda_version: str | None = Field(default=None, max_length=WORD, description="The driver's.")
    gpu_serials: tuple[Name, ...] | None = Field(
        default=None, max_length=GPUS_PER_NODE, description="Per GPU, as NVML reads the board."
    )
    partitions: tuple[Name, ...] | None = Field(default=None, max_length=SMALL_LIST)
    features: tuple[Name, ...] | None = Field(default=None, max_length=SMALL_LIST)
    labels: dict[Key, Str] | None = Field(default=None, max_length=MAP_ENTRIES)
    switch: str | None = Field(
        default=None,
        max_length=NAME,
        description="The leaf switch the node hangs off (Slurm's topology, or a topology label): "
        "the failure domain incidents name.",
    )


@event(topic="nodes")
class NodeFactsObserved(NodeEvent):
    type: Literal["NodeFactsObserved"] = "NodeFactsObserved"
    payload: NodeFactsObservedPayload


class HealthStatus(StrEnum):
    OK = "OK"
    WARN = "WARN"
    CRITICAL = "CRITICAL"
    UNKNOWN = "UNKNOWN"


class NodeHealthCheckedPayload(Payload):
    check: str = Field(min_length=1, max_length=NAME)
    status: HealthStatus
    message: str = Field(default="", max_length=TEXT)
    details: Details = Field(default_factory=dict)
    duration_ms: float | None = Field(default=None, ge=0)


@event(topic="nodes")
class NodeHealthChecked(NodeEvent):
    type: Literal["NodeHealthChecked"] = "NodeHealthChecked"
    payload: NodeHealthCheckedPayload


class SchedulerNodeState(StrEnum):
    """A node as its scheduler sees it, in scheduler-agnostic words."""

    AVAILABLE = "AVAILABLE"  # takes work (idle, allocated, mixed, Ready)
    DRAINING = "DRAINING"  # takes no new work, jobs still running there
    DRAINED = "DRAINED"  # takes no work (drained, cordoned)
    DOWN = "DOWN"  # not responding, failed, removed
    UNKNOWN = "UNKNOWN"


# Centrality's own drains carry reasons that begin so in the scheduler; a drain with another
# reason is someone else's, and the streams app never undoes it.
DRAIN_REASON_PREFIX = "centrality:"


class NodeStateObservedPayload(Payload):
    state: SchedulerNodeState
    raw_state: str = Field(max_length=NAME, description="The scheduler's words, e.g. IDLE+DRAIN.")
    reason: str | None = Field(default=None, max_length=TEXT, description="Why, as it says.")
    scheduler: str = Field(min_length=1, max_length=WORD, description="slurm, kubernetes, ray.")


@event(topic="nodes")
class NodeStateObserved(NodeEvent):
    """What a scheduler reports about a node (drained or down by anyone, Centrality included):
    node state follows this, not what a rule asked for."""

    type: Literal["NodeStateObserved"] = "NodeStateObserved"
    payload: NodeStateObservedPayload
