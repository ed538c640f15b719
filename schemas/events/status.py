"""What Centrality believes about a node or a job right now, as the streams app's tables hold it.

The streams app publishes one of these whenever what a person would read about a subject
changes (not on every heartbeat), keyed by the subject on a compacted topic: `centrality nodes`,
`centrality jobs` and `centrality.client` read them back, so what people see is exactly the state
the rules decide on, never a second derivation of it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from schemas.envelope import Event, Payload
from schemas.events.jobs import JobState
from schemas.events.nodes import NodeEvent
from schemas.groups import NODES, Facts
from schemas.limits import (
    GPUS_PER_NODE,
    INT64_MAX,
    MAP_ENTRIES,
    NAME,
    SMALL_LIST,
    SUBJECT,
    TEXT,
    UINT32_MAX,
    Key,
    Str,
    Timestamp,
)
from schemas.limits import Nodes as NodeList
from schemas.registry import event

# in_service: takes work · draining: a drain was asked for · suspect: a drain was decided but
# refused, held or failed (still takes work) · quarantined: drained by Centrality · benchmarking,
# resetting, rebooting, releasing: steps of that story (the remediation ladder's rungs among
# them) · escalated: the ladder is exhausted, drained for hardware service until released ·
# held: drained by an operator, until an operator releases it · drained / down: out of service
# per the scheduler, by someone else · unreachable: no heartbeat for longer than its limit (out
# of service as far as people can tell; back by itself when heartbeats resume).
NodeCondition = Literal[
    "in_service",
    "draining",
    "suspect",
    "quarantined",
    "benchmarking",
    "resetting",
    "rebooting",
    "releasing",
    "escalated",
    "held",
    "drained",
    "down",
    "unreachable",
]
Name = Annotated[str, StringConstraints(max_length=NAME)]
SHOWN_MAX = 16  # jobs on a node, nodes of a job: the first ones, and how many in all


class NodeStatusPayload(Payload):
    state: NodeCondition
    since: Timestamp | None = Field(default=None, description="When the state began.")
    why: str | None = Field(default=None, max_length=TEXT, description="The decision's reason.")
    decided_by: str | None = Field(
        default=None, max_length=NAME, description="The rule, or `operator/<name>`."
    )
    stage: str | None = Field(default=None, max_length=NAME, description="The story's step.")
    pending: str | None = Field(default=None, max_length=NAME, description="What is awaited.")
    problem: str | None = Field(
        default=None, max_length=TEXT, description="What went wrong or held it (a silence)."
    )
    held_by: str | None = Field(default=None, max_length=NAME, description="The operator.")
    rung: str | None = Field(
        default=None,
        max_length=NAME,
        description="The remediation ladder's rung now (validate, reset, reboot, escalate).",
    )
    ladder: tuple[Str, ...] = Field(
        default=(), max_length=SMALL_LIST, description="The ladder as climbed so far, in order."
    )
    rungs_left: tuple[Str, ...] = Field(
        default=(), max_length=SMALL_LIST, description="The rungs still to climb, in order."
    )
    scheduler_state: str | None = Field(default=None, max_length=NAME)
    scheduler_reason: str | None = Field(default=None, max_length=TEXT)
    gpus: int | None = Field(default=None, ge=0, le=GPUS_PER_NODE)
    gpu_model: str | None = Field(default=None, max_length=NAME)
    partitions: tuple[Name, ...] = Field(default=(), max_length=SHOWN_MAX)
    features: tuple[Name, ...] = Field(
        default=(), max_length=SHOWN_MAX, description="Active Slurm features."
    )
    labels: dict[Key, Str] = Field(
        default_factory=dict, max_length=MAP_ENTRIES, description="Kubernetes node labels."
    )
    jobs: tuple[str, ...] = Field(default=(), max_length=SHOWN_MAX)
    jobs_running: int = Field(default=0, ge=0, le=UINT32_MAX)
    episodes: int = Field(default=0, ge=0, le=UINT32_MAX, description="Stories that ended.")
    last_benchmark: str | None = Field(default=None, max_length=NAME)
    last_benchmark_at: Timestamp | None = None
    incident: str | None = Field(
        default=None, max_length=NAME, description="The open incident the node belongs to."
    )


@event(topic="status")
class NodeStatusChanged(NodeEvent):
    type: Literal["NodeStatusChanged"] = "NodeStatusChanged"
    payload: NodeStatusPayload

    @property
    def group_facts(self) -> Facts:
        """What node groups select the node by, as the streams app last knew it."""
        p = self.payload
        return Facts(
            NODES,
            self.cluster,
            node=self.subject,
            gpu_model=p.gpu_model,
            partitions=p.partitions,
            features=p.features,
            labels=p.labels,
        )


class JobStatusPayload(Payload):
    state: JobState | None = None
    since: Timestamp | None = None
    attempt: int = Field(default=0, ge=0, le=UINT32_MAX)
    restarts_used: int = Field(default=0, ge=0, le=UINT32_MAX)
    restarts_left: int | None = Field(
        default=None, ge=0, le=UINT32_MAX, description="None: no restart rule loaded."
    )
    pending: str | None = Field(default=None, max_length=NAME)
    why: str | None = Field(default=None, max_length=TEXT)
    checkpoint_step: int | None = Field(default=None, ge=0, le=INT64_MAX)
    checkpoint_uri: str | None = Field(default=None, max_length=TEXT)
    checkpoint_at: Timestamp | None = None
    nodes: NodeList = Field(default=(), max_length=SHOWN_MAX)
    nodes_count: int = Field(default=0, ge=0, le=UINT32_MAX)
    last_signal: str | None = Field(default=None, max_length=NAME)
    last_signal_at: Timestamp | None = None
    failures: int = Field(default=0, ge=0, le=UINT32_MAX)
    preemptions: int = Field(default=0, ge=0, le=UINT32_MAX)
    goodput: float | None = Field(default=None, ge=0, le=1)


@event(topic="status")
class JobStatusChanged(Event):
    type: Literal["JobStatusChanged"] = "JobStatusChanged"
    subject: str = Field(min_length=1, max_length=SUBJECT, description="The job id.")
    payload: JobStatusPayload
