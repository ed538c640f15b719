"""Action results: what a worker did about a trigger, so the audit trail is events too."""

import uuid
from datetime import UTC
from typing import Annotated, Literal

from pydantic import Field

from schemas.envelope import Event, Payload
from schemas.events.nodes import NodeEvent
from schemas.limits import (
    GPUS_PER_NODE,
    MAP_ENTRIES,
    NAME,
    NODE_NAME,
    SMALL_LIST,
    SUBJECT,
    TEXT,
    UINT32_MAX,
    WORD,
    Details,
    Key,
    Str,
    Timestamp,
)
from schemas.registry import event


class ActionPayload(Payload):
    trigger_id: uuid.UUID
    trigger_type: str = Field(max_length=NAME)
    action: str = Field(max_length=NAME, description="The handler that acted, e.g. `restart_job`.")
    attempt: int = Field(default=1, ge=1, le=UINT32_MAX)
    dry_run: bool = False
    nodes: tuple[str, ...] = Field(
        default=(),
        max_length=10_000,
        description="The nodes the trigger named (empty for job actions): lets a consumer route "
        "the result to each node's state, as the result itself is keyed by the trigger's subject.",
    )
    jobs: tuple[Annotated[str, Field(max_length=SUBJECT)], ...] = Field(
        default=(),
        max_length=SMALL_LIST,
        description="The jobs the trigger named (a quarantine's jobs on its nodes): lets a "
        "consumer tell each job which nodes its restarts must avoid.",
    )
    move_jobs: bool = Field(
        default=False,
        description="A quarantine that restarts `jobs` without its nodes once drained (its "
        "trigger's `move_jobs`).",
    )
    operator: str | None = Field(
        default=None, max_length=NAME, description="The operator who commanded it, if one did."
    )
    reason: str | None = Field(default=None, max_length=TEXT, description="The trigger's reason.")
    decided_at: Timestamp | None = Field(
        default=None,
        description="When the trigger was decided (its event time): a story begun by an outcome "
        "outside it is named by its decision, as the decision's own would have been.",
    )
    forced: bool = Field(default=False, description="Commanded past the circuit breakers.")
    shadow: bool = Field(
        default=False,
        description="The trigger came from a rule in shadow mode: only planned (`dry_run` too), "
        "never carried out.",
    )


class ActionStartedPayload(ActionPayload):
    pass


class ActionSucceededPayload(ActionPayload):
    detail: Details = Field(default_factory=dict, description="What was done.")


class ActionFailedPayload(ActionPayload):
    error: str = Field(max_length=TEXT)
    permanent: bool
    refused: bool = Field(
        default=False,
        description="The worker did not act at all (circuit breaker, allowlist, a silence, an "
        "operator without authority); `error` says why.",
    )
    held_by: str | None = Field(
        default=None,
        max_length=NAME,
        description="Records written before `ActionHeld` existed: the silence that held this "
        "decision. Workers now emit `ActionHeld` for a hold.",
    )


class ActionHeldPayload(ActionPayload):
    held_by: str = Field(min_length=1, max_length=NAME, description="The silence's id.")
    until: Timestamp = Field(description="When the silence ends: rules decide afresh after it.")
    why: str = Field(max_length=TEXT, description="The silence's words: who set it and why.")

    @property
    def said(self) -> str:
        """The hold in one sentence, as every view says it."""
        until = self.until.astimezone(UTC).isoformat().replace("+00:00", "Z")
        return f"held by silence {self.held_by} until {until} ({self.why})"


@event(topic="actions")
class ActionStarted(Event):
    type: Literal["ActionStarted"] = "ActionStarted"
    payload: ActionStartedPayload


@event(topic="actions")
class ActionSucceeded(Event):
    type: Literal["ActionSucceeded"] = "ActionSucceeded"
    payload: ActionSucceededPayload


@event(topic="actions")
class ActionFailed(Event):
    type: Literal["ActionFailed"] = "ActionFailed"
    payload: ActionFailedPayload


@event(topic="actions")
class ActionHeld(Event):
    """A rule's decision a silence holds: recorded and told, not carried out, and no failure."""

    type: Literal["ActionHeld"] = "ActionHeld"
    payload: ActionHeldPayload


class GpuBenchmark(Payload):
    gpu: int = Field(ge=0, le=GPUS_PER_NODE - 1)
    matmul_tflops: float | None = Field(default=None, ge=0, description="bf16/fp16 dense GEMM.")
    dtype: str | None = Field(default=None, max_length=WORD)
    model: str | None = Field(
        default=None, max_length=NAME, description="The GPU's name as the runner saw it."
    )
    memory_bandwidth_gbps: float | None = Field(default=None, ge=0)
    error: str | None = Field(default=None, max_length=TEXT)


class FleetBaseline(Payload):
    """What the node's GPU model reaches in its cluster, as the action worker read it from history
    when the benchmark ended: over the other nodes of that model with a passing benchmark within
    the window (each node's latest), the medians of their slowest GPU's figures and of their bus
    bandwidth."""

    model: str | None = Field(default=None, max_length=NAME, description="As NVML names it.")
    window_s: float = Field(ge=0, description="How far back the peers' benchmarks were read.")
    peers: int = Field(default=0, ge=0, le=UINT32_MAX, description="Nodes the medians are of.")
    matmul_tflops: float | None = Field(default=None, ge=0)
    memory_gbps: float | None = Field(default=None, ge=0)
    busbw_gbps: float | None = Field(default=None, ge=0)
    unavailable: str | None = Field(
        default=None,
        max_length=TEXT,
        description="Why there are no medians (history unreachable, no GPU model reported).",
    )


class BenchmarkCompletedPayload(Payload):
    trigger_id: uuid.UUID | None = Field(default=None, description="The RunBenchmark, if any.")
    node: str = Field(max_length=NODE_NAME)
    gpus: tuple[GpuBenchmark, ...] = Field(default=(), max_length=GPUS_PER_NODE)
    nccl_busbw_gbps: float | None = Field(default=None, ge=0)
    verdict: Literal["pass", "fail", "no-gpu", "error"]
    reasons: tuple[Str, ...] = Field(
        default=(), max_length=SMALL_LIST, description="Why the verdict, per threshold."
    )
    thresholds: dict[Key, float] = Field(default_factory=dict, max_length=MAP_ENTRIES)
    duration_s: float | None = Field(default=None, ge=0)
    fleet: FleetBaseline | None = Field(
        default=None, description="The GPU model's fleet baseline a pass is judged against too."
    )


@event(topic="nodes")
class BenchmarkCompleted(NodeEvent):
    """Benchmark figures of one node; on the node topic so the Node table sees them in order."""

    type: Literal["BenchmarkCompleted"] = "BenchmarkCompleted"
    payload: BenchmarkCompletedPayload
