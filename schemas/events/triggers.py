"""Triggers: decisions of rules. Their id is deterministic so a replayed decision is recognised."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal, Self

from pydantic import Field

from schemas.envelope import Event, Payload
from schemas.limits import (
    CAUSES,
    GPUS_PER_NODE,
    INT64_MAX,
    NAME,
    SMALL_LIST,
    SUBJECT,
    TEXT,
    UINT32_MAX,
    Nodes,
    Str,
)
from schemas.registry import event

_TRIGGER_NAMESPACE = uuid.UUID("6f0b5a57-3c57-4c3e-9a55-2c0f4a0c7e11")


def trigger_id(trigger_type: str, rule: str, subject: str, window: str) -> uuid.UUID:
    """Same decision → same id, across redelivery, restarts and replay. The trigger type is part
    of it because one decision often yields several triggers (quarantine, benchmark, notify)."""
    return uuid.uuid5(_TRIGGER_NAMESPACE, f"{trigger_type}\x1f{rule}\x1f{subject}\x1f{window}")


# How much a decision matters: the one scale for rules, XIDs and what people are told.
Severity = Literal["info", "warning", "critical"]

# The remediation ladder's rungs (docs/remediation.md): validate (the benchmark), reset the GPUs,
# reboot the node. Each is an action of its own; escalating to a person ends the ladder.
Rung = Literal["validate", "reset", "reboot"]
RUNGS_MAX = 16
Ladder = Annotated[
    tuple[Rung, ...] | None,
    Field(
        default=None,
        max_length=RUNGS_MAX,
        description="The rungs left to climb if this step does not end in a passing validation "
        "(empty: escalate to a person); None: no ladder, the node stays drained for people.",
    ),
]


# How a decision about a slow node under a running job was timed (docs/rules.md, `slow_node`).
TimingChoice = Literal["now", "at_checkpoint", "ask", "leave"]


GpuHours = Annotated[float, Field(ge=0, le=1e12)]


class TimingCosts(Payload):
    """Expected GPU-hours of each way (None: a way the job did not allow)."""

    now: GpuHours
    leave: GpuHours
    at_checkpoint: GpuHours | None = None
    ask: GpuHours | None = None

    def of(self) -> dict[TimingChoice, float]:
        """The ways weighed and their figures."""
        ways: tuple[TimingChoice, ...] = ("now", "at_checkpoint", "ask", "leave")
        return {w: v for w in ways if (v := getattr(self, w)) is not None}


class Timing(Payload):
    """What each way of timing the decision was expected to cost the job, in GPU-hours, and the
    one chosen: the work lost since the checkpoint, the slowdown until the next, the restart."""

    chosen: TimingChoice
    job_id: str = Field(max_length=SUBJECT)
    gpu_h: TimingCosts
    saved_gpu_h: float = Field(
        ge=-1e12, le=1e12, description="Against taking the node out at once (`now`)."
    )


class TriggerPayload(Payload):
    rule: str = Field(min_length=1, max_length=NAME)
    window: str = Field(
        max_length=NAME, description="What makes this decision unique for the rule and subject."
    )
    reason: str = Field(max_length=TEXT)
    caused_by: tuple[uuid.UUID, ...] = Field(
        max_length=CAUSES, description="Ids of the events behind the decision."
    )
    severity: Severity = "warning"
    operator: str | None = Field(
        default=None,
        max_length=NAME,
        description="The operator who commanded it (signed with their key); None: a rule decided.",
    )
    force: bool = Field(
        default=False, description="An operator's command that passes the circuit breakers."
    )
    shadow: bool = Field(
        default=False,
        description="Decided by a rule in shadow mode: recorded, never carried out (action "
        "workers only plan it) and never taken by the streams app as having happened.",
    )
    fault: str | None = Field(
        default=None,
        max_length=NAME,
        description="What kind of fault the decision is about (`xid:79`, `health:nvlink`), for "
        "grouping into incidents with other nodes' faults of the same kind; None: the rule's.",
    )
    timing: Timing | None = Field(
        default=None, description="A decision timed to a running job's checkpoints: its costs."
    )


class Trigger(Event):
    payload: TriggerPayload

    @classmethod
    def decide(
        cls, *, cause: Event, source: str, subject: str | None = None, **payload: Any
    ) -> Self:
        """Build the trigger `cause` led to; the id derives from rule, subject and window.

        `subject` defaults to the cause's; a rule deciding about another entity (a node's rule
        about the job running there) names it, so the action and its results are keyed by it.
        """
        p = cls.model_fields["payload"].annotation
        assert isinstance(p, type) and issubclass(p, TriggerPayload)
        body = p(caused_by=payload.pop("caused_by", (cause.event_id,)), **payload)
        subject = subject or cause.subject
        return cls.model_validate(
            {
                "event_id": trigger_id(
                    cls.model_fields["type"].default, body.rule, subject, body.window
                ),
                "source": source,
                "cluster": cause.cluster,
                "subject": subject,
                "occurred_at": cause.occurred_at,
                "payload": body,
            }
        )

    def as_shadow(self) -> Self:
        """This decision as a rule in shadow mode records it: marked, and with an id of its own
        (still deterministic), so it is never taken for the live decision nor blocks one."""
        return self.model_copy(
            update={
                "event_id": uuid.uuid5(_TRIGGER_NAMESPACE, f"shadow\x1f{self.event_id}"),
                "payload": self.payload.model_copy(update={"shadow": True}),
            }
        )


class RestartJobPayload(TriggerPayload):
    checkpoint_uri: str | None = Field(
        max_length=TEXT, description="Resume from here; None means from scratch."
    )
    checkpoint_step: int | None = Field(default=None, ge=0, le=INT64_MAX)
    attempt: int = Field(
        ge=1, le=UINT32_MAX, description="The attempt that ended and is being restarted."
    )
    exclude_nodes: Nodes = Field(
        default=(),
        description="Nodes the failure implicated: the job must not run there again (Slurm: its "
        "excluded node list, set before it can start).",
    )


@event(topic="triggers")
class RestartJob(Trigger):
    type: Literal["RestartJob"] = "RestartJob"
    payload: RestartJobPayload


class QuarantineBatch(Payload):
    """Quarantines drained a few at a time (a big job's suspects): the action workers drain
    one of them only while fewer than `most_out` of its batch are out and not yet benchmarked;
    the others wait their turn, their nodes still in service."""

    name: str = Field(min_length=1, max_length=SUBJECT + 32, description="Shared by the batch.")
    most_out: int = Field(ge=1, le=UINT32_MAX, description="Nodes of the batch out at once.")


class QuarantineNodesPayload(TriggerPayload):
    nodes: Nodes = Field(min_length=1)
    drain: bool = Field(default=True, description="Stop new work being scheduled there.")
    taint: str | None = Field(
        default="centrality.io/quarantined", max_length=NAME, description="Taint key."
    )
    jobs: tuple[Annotated[str, Field(max_length=SUBJECT)], ...] = Field(
        default=(),
        max_length=SMALL_LIST,
        description="Jobs running on (or failing on) the nodes when this was decided: their "
        "restarts avoid the nodes.",
    )
    batch: QuarantineBatch | None = Field(
        default=None, description="Drained in turn with the rest of its batch; None: at once."
    )
    move_jobs: bool = Field(
        default=False,
        description="Once the drain succeeded, restart `jobs` from their last checkpoint without "
        "these nodes (a slow node taken out under a running job: docs/rules.md, `slow_node`). "
        "False: a running job is left to end by itself, as a fatal fault makes it.",
    )


@event(topic="triggers")
class QuarantineNodes(Trigger):
    type: Literal["QuarantineNodes"] = "QuarantineNodes"
    payload: QuarantineNodesPayload


class ReleaseNodesPayload(TriggerPayload):
    nodes: Nodes = Field(min_length=1)


@event(topic="triggers")
class ReleaseNodes(Trigger):
    type: Literal["ReleaseNodes"] = "ReleaseNodes"
    payload: ReleaseNodesPayload


class RunBenchmarkPayload(TriggerPayload):
    nodes: Nodes = Field(min_length=1)
    suites: tuple[Literal["gpu", "nccl"], ...] = Field(default=("gpu", "nccl"), max_length=2)
    ladder: Ladder = None


@event(topic="triggers")
class RunBenchmark(Trigger):
    type: Literal["RunBenchmark"] = "RunBenchmark"
    payload: RunBenchmarkPayload


class ResetGpusPayload(TriggerPayload):
    nodes: Nodes = Field(min_length=1)
    gpus: tuple[Annotated[int, Field(ge=0, le=GPUS_PER_NODE - 1)], ...] = Field(
        default=(), max_length=GPUS_PER_NODE, description="GPU indexes; empty: every GPU."
    )
    ladder: Ladder = None


@event(topic="triggers")
class ResetGpus(Trigger):
    """A rung of the remediation ladder: reset the GPUs (`nvidia-smi -r`) of drained nodes,
    each only when no process uses it."""

    type: Literal["ResetGpus"] = "ResetGpus"
    payload: ResetGpusPayload


class RebootNodesPayload(TriggerPayload):
    nodes: Nodes = Field(min_length=1)
    ladder: Ladder = None


@event(topic="triggers")
class RebootNodes(Trigger):
    """A rung of the remediation ladder: reboot drained nodes through their scheduler; done once
    the scheduler shows them back, not when the command returned."""

    type: Literal["RebootNodes"] = "RebootNodes"
    payload: RebootNodesPayload


class EscalateNodesPayload(TriggerPayload):
    nodes: Nodes = Field(min_length=1)
    tried: tuple[Str, ...] = Field(
        default=(), max_length=SMALL_LIST, description="The ladder as climbed, in order."
    )
    xids: tuple[Annotated[int, Field(ge=0, le=UINT32_MAX)], ...] = Field(
        default=(), max_length=SMALL_LIST, description="The XIDs behind it, as seen."
    )
    benchmarks: tuple[Str, ...] = Field(
        default=(), max_length=SMALL_LIST, description="The validations' verdicts and figures."
    )
    serials: tuple[Annotated[str, Field(max_length=NAME)], ...] = Field(
        default=(),
        max_length=GPUS_PER_NODE,
        description="The node's GPU board serials, per GPU, as its agent read them from NVML "
        "(empty: none reported; the worker then reads them on the node).",
    )


@event(topic="triggers")
class EscalateNodes(Trigger):
    """The ladder is exhausted: the nodes stay drained, marked for hardware service, and a
    person is told (Slack, and a webhook for a ticketing system)."""

    type: Literal["EscalateNodes"] = "EscalateNodes"
    payload: EscalateNodesPayload


class NotifyPayload(TriggerPayload):
    title: str = Field(min_length=1, max_length=TEXT)
    text: str = Field(default="", max_length=TEXT)
    incident: str = Field(max_length=TEXT, description="Messages of one incident share a thread.")
    nodes: Nodes = ()
    job_id: str | None = Field(default=None, max_length=SUBJECT)


@event(topic="triggers")
class Notify(Trigger):
    type: Literal["Notify"] = "Notify"
    payload: NotifyPayload


# The signals a job may honour as "write a checkpoint now" (docs/jobs.md, "Asked for a
# checkpoint"): Lightning's and NeMo's SLURM requeue hook is USR1.
CheckpointSignal = Literal["USR1", "USR2", "TERM", "INT", "HUP", "CONT"]


class RequestCheckpointPayload(TriggerPayload):
    signal: CheckpointSignal = Field(
        default="USR1", description="Sent to the job's processes (Slurm: batch script and steps)."
    )
    nodes: Nodes = Field(
        default=(), description="The nodes the job is to be restarted without, once it saved."
    )


@event(topic="triggers")
class RequestCheckpoint(Trigger):
    """Ask the running job that is the subject to write a checkpoint now, through the hook it
    honours: a signal. What follows waits for its `CheckpointSaved` (docs/jobs.md)."""

    type: Literal["RequestCheckpoint"] = "RequestCheckpoint"
    payload: RequestCheckpointPayload


class CancelJobPayload(TriggerPayload):
    pass


@event(topic="triggers")
class CancelJob(Trigger):
    """End the job that is the subject (e.g. an allocation idling on its GPUs)."""

    type: Literal["CancelJob"] = "CancelJob"
    payload: CancelJobPayload


class ReleaseJobPayload(TriggerPayload):
    after: str = Field(description="The job whose completion this release follows.")


@event(topic="triggers")
class ReleaseJob(Trigger):
    """Let the held job that is the subject start (a completion hook of `after`)."""

    type: Literal["ReleaseJob"] = "ReleaseJob"
    payload: ReleaseJobPayload
