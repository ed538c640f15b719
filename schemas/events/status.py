"""What Centrality believes about a node or a job right now, as the streams app's tables hold it.

The streams app publishes one of these whenever what a person would read about a subject
changes (not on every heartbeat), keyed by the subject on a compacted topic: `centrality nodes`,
`centrality jobs` and `centrality.client` read them back, so what people see is exactly the state
the rules decide on, never a second derivation of it.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, get_args

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
    UINT16_MAX,
    UINT32_MAX,
    Key,
    Str,
    Timestamp,
)
from schemas.limits import Nodes as NodeList
from schemas.registry import event

# One name per state, whoever took the node out (`by` says who: a rule, `operator/<name>`, or
# `scheduler` for someone who drained it there by hand).
# in_service: takes work · draining: a drain was asked for · suspect: a drain was decided but
# refused or failed (still takes work) · held: a drain was decided and a silence holds it (still
# takes work; rules decide afresh after the silence) · quarantined: drained, takes no work until
# released (by a rule, an operator, or by hand in the scheduler) · benchmarking, resetting,
# rebooting, releasing: steps of Centrality's story (the remediation ladder's rungs among them) ·
# escalated: the ladder is exhausted, drained for hardware service until released · down: down
# per the scheduler · unreachable: no heartbeat for longer than its limit (out of service as far
# as people can tell; back by itself when heartbeats resume).
NodeCondition = Literal[
    "in_service",
    "draining",
    "suspect",
    "held",
    "quarantined",
    "benchmarking",
    "resetting",
    "rebooting",
    "releasing",
    "escalated",
    "down",
    "unreachable",
]
NODE_STATES: tuple[str, ...] = get_args(NodeCondition)
# Takes no work: what `centrality nodes --out-of-service` selects (draining, suspect and held
# nodes still take work: their drain has not happened).
OUT_OF_SERVICE = frozenset(NODE_STATES) - {"in_service", "draining", "suspect", "held"}
Name = Annotated[str, StringConstraints(max_length=NAME)]
SHOWN_MAX = 16  # jobs on a node, nodes of a job: the first ones, and how many in all


class NodeStatusPayload(Payload):
    state: NodeCondition
    since: Timestamp | None = Field(default=None, description="When the state began.")
    why: str | None = Field(
        default=None,
        max_length=TEXT,
        description="Why it is in this state, in the words of whoever put it there (in service: "
        "how it came back, and why it had been out).",
    )
    by: str | None = Field(
        default=None,
        max_length=NAME,
        description="Who took the node out (the rule, `operator/<name>`, or `scheduler`: by "
        "hand there), or, in service, who returned it.",
    )
    stage: str | None = Field(default=None, max_length=NAME, description="The story's step.")
    pending: str | None = Field(default=None, max_length=NAME, description="What is awaited.")
    problem: str | None = Field(
        default=None, max_length=TEXT, description="What went wrong or held it (a silence)."
    )
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
    """v2: an operator's `held` and a scheduler's `drained` are `quarantined`, who took the node
    out is `by` (once `decided_by`, `held_by`); `held` is a silence's hold alone."""

    current_version: ClassVar[int] = 2
    type: Literal["NodeStatusChanged"] = "NodeStatusChanged"
    schema_version: int = Field(default=2, ge=1, le=UINT16_MAX)
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
    restarts_used: int = Field(
        default=0,
        ge=0,
        le=UINT32_MAX,
        description="Restarts of its budget spent: attempts after the first, and a requeue asked "
        "for that has no attempt yet.",
    )
    restarts_left: int | None = Field(
        default=None,
        ge=0,
        le=UINT32_MAX,
        description="Restarts still allowed (with `restarts_used`, the restart rule's budget); "
        "None: no restart rule loaded.",
    )
    pending: str | None = Field(default=None, max_length=NAME)
    pending_since: Timestamp | None = Field(
        default=None, description="Since when it is awaited (a requeue: when it was asked for)."
    )
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
