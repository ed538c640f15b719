"""For rule authors: events built in a line, and stories run through the brain that decides live.

A `Story` is the pure `streams.brain.process.Brain` that the streams worker and `centrality replay`
run, with the same rule modules (the built-ins, and yours) and config; events are told in event
time and the clock ticks between them as the worker's timer would. What it returns is what the
worker would have sent to the action workers, shadow decisions included; tell it the action
workers' results (`result`) to let a story go on.

    story = Story(rules=["my_rules.nccl"], config={"nccl_timeout_twice": {"within_s": 600}})
    story.tell(log_signal(JOB, "NCCL_TIMEOUT", at_s=0))
    decided = story.tell(log_signal(JOB, "NCCL_TIMEOUT", at_s=60))
    assert [t.type for t in decided] == ["Notify"]

Events are about cluster `test`, at `T0` plus `at_s` seconds.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from schemas.envelope import Event
from schemas.events import (
    ActionFailed,
    ActionSucceeded,
    BenchmarkCompleted,
    CheckpointSaved,
    CollectivesTimed,
    FleetBaseline,
    GpuSampled,
    GpuXidObserved,
    JobExited,
    JobStateChanged,
    JobSubmitted,
    LogSignalDetected,
    NodeFactsObserved,
    NodeHealthChecked,
    NodeHeartbeat,
    NodeStateObserved,
    StepTimesObserved,
    Trigger,
)
from schemas.events.incidents import IncidentPayload
from streams.brain.process import Brain, Clock
from streams.rules.registry import RuleEngine
from streams.settings import rule_modules
from streams.state.node import Node
from streams.state.node_set import NodeSet
from streams.state.training_job import TrainingJob

T0 = datetime(2026, 1, 1, tzinfo=UTC)
JOB = "slurm/test/42"
NODES = ("n1", "n2")
TICK_INTERVAL_S = 5.0  # the worker's default (`CENTRALITY_STREAMS_TICK_INTERVAL_S`)


def envelope(subject: str = JOB, at_s: float = 0.0) -> dict[str, Any]:
    """The envelope fields of an event about `subject`, `at_s` seconds after `T0`, observed
    as it happened (not written long after, as history sent late is)."""
    at = T0 + timedelta(seconds=at_s)
    return {
        "source": "test",
        "cluster": "test",
        "subject": subject,
        "occurred_at": at,
        "observed_at": at,
    }


def episode(at_s: float) -> str:
    """The name of a node's quarantine episode begun `at_s` seconds after `T0`."""
    return f"q{(T0 + timedelta(seconds=at_s)).isoformat()}"


def submitted(job: str = JOB, at_s: float = 0.0, **asked: Any) -> JobSubmitted:
    """A job as its scheduler took it (`name`, `user`, `queue`, `nodes_requested`...): what job
    classes (rule scopes) select by."""
    return JobSubmitted(**envelope(job, at_s), payload=asked)


def running(
    job: str = JOB, attempt: int = 1, at_s: float = 0.0, nodes: tuple[str, ...] = NODES
) -> JobStateChanged:
    return JobStateChanged(
        **envelope(job, at_s),
        payload={"state": "RUNNING", "raw_state": "RUNNING", "attempt": attempt, "nodes": nodes},
    )


def ended(
    job: str = JOB,
    state: str = "FAILED",
    attempt: int = 1,
    at_s: float = 0.0,
    nodes: tuple[str, ...] = NODES,
    exit_code: int | None = 1,
) -> JobExited:
    return JobExited(
        **envelope(job, at_s),
        payload={"state": state, "exit_code": exit_code, "attempt": attempt, "nodes": nodes},
    )


def checkpoint(step: int, subject: str = JOB, at_s: float = 0.0) -> CheckpointSaved:
    return CheckpointSaved(
        **envelope(subject, at_s), payload={"step": step, "uri": f"s3://ckpt/step-{step}"}
    )


def step_times(
    node: str, median_s: float, job: str = JOB, at_s: float = 0.0, steps: int = 10
) -> StepTimesObserved:
    """One host's step times over an interval, as the log tailer summarises them."""
    return StepTimesObserved(
        **envelope(job, at_s),
        payload={"node": node, "steps": steps, "median_s": median_s, "max_s": median_s},
    )


def collectives_timed(
    node: str,
    exec_us: float,
    job: str = JOB,
    at_s: float = 0.0,
    comm_nodes: int = 4,
    timing: str = "kernel_gpu",
    collective: str = "AllReduce",
    communicator: str = "0x9e7a479f95a66c",
) -> CollectivesTimed:
    """One host's collectives in one communicator over an interval, as the log tailer summarises
    NCCL Inspector's records."""
    return CollectivesTimed(
        **envelope(job, at_s),
        payload={
            "node": node,
            "communicator": communicator,
            "collective": collective,
            "size_bytes": 1 << 28,
            "comm_ranks": 8 * comm_nodes,
            "comm_nodes": comm_nodes,
            "ranks": 8,
            "count": 500,
            "exec_us": exec_us,
            "timing": timing,
        },
    )


def log_signal(
    job: str = JOB, signal: str = "CUSTOM", at_s: float = 0.0, line: str = "", **fields: Any
) -> LogSignalDetected:
    """What the log tailer reports when a line of `job` matches (`signal`: a `LogSignal`)."""
    return LogSignalDetected(
        **envelope(job, at_s), payload={"signal": signal, "line": line or signal, **fields}
    )


def completed(subject: str = JOB, at_s: float = 0.0) -> LogSignalDetected:
    return log_signal(subject, "TRAINING_COMPLETE", at_s, "Training Complete")


def heartbeat(node: str = "n1", at_s: float = 0.0) -> NodeHeartbeat:
    return NodeHeartbeat(
        **envelope(node, at_s), payload={"agent_version": "t", "gpus": 8, "interval_s": 10}
    )


def facts(node: str = "n1", at_s: float = 0.0, **reported: Any) -> NodeFactsObserved:
    """What a node is, as the agent or a watcher reports it (`gpu_model`, `partitions`,
    `features`, `labels`...): what node groups (rule scopes) select by."""
    return NodeFactsObserved(**envelope(node, at_s), payload=reported)


def health(
    node: str, check: str, status: str, at_s: float = 0.0, message: str = ""
) -> NodeHealthChecked:
    return NodeHealthChecked(
        **envelope(node, at_s), payload={"check": check, "status": status, "message": message}
    )


def xid(node: str = "n1", code: int = 79, at_s: float = 0.0, gpu: int = 0) -> GpuXidObserved:
    return GpuXidObserved(**envelope(node, at_s), payload={"gpu": gpu, "xid": code})


def sample(node: str = "n1", gpu: int = 0, at_s: float = 0.0, **counters: Any) -> GpuSampled:
    return GpuSampled(**envelope(node, at_s), payload={"gpu": gpu, **counters})


def benchmark(
    node: str = "n1",
    verdict: str = "pass",
    at_s: float = 0.0,
    trigger: Trigger | None = None,
    *,
    tflops: float | None = None,
    memory_gbps: float | None = None,
    busbw_gbps: float | None = None,
    gpus: int = 8,
    model: str | None = None,
    fleet: FleetBaseline | None = None,
) -> BenchmarkCompleted:
    """The runner's report; with `tflops` or `memory_gbps`, `gpus` GPUs that each measured them
    (`model`: the name the runner saw; `fleet`: the model's baseline the worker read)."""
    measured = tflops is not None or memory_gbps is not None
    figures = {"matmul_tflops": tflops, "memory_bandwidth_gbps": memory_gbps, "model": model}
    return BenchmarkCompleted(
        **envelope(node, at_s),
        payload={
            "trigger_id": trigger.event_id if trigger else None,
            "node": node,
            "gpus": [{"gpu": i, **figures} for i in range(gpus)] if measured else [],
            "nccl_busbw_gbps": busbw_gbps,
            "verdict": verdict,
            "reasons": () if verdict == "pass" else ("slow",),
            "fleet": fleet,
        },
    )


def scheduler_says(
    node: str = "n1",
    state: str = "DRAINED",
    at_s: float = 0.0,
    reason: str | None = "admin",
    raw_state: str | None = None,
) -> NodeStateObserved:
    """What a scheduler's watcher reports of a node (`raw_state`: its own words, e.g. Slurm's
    `DOWN+DRAIN+REBOOT_ISSUED`; the state's name by default)."""
    return NodeStateObserved(
        **envelope(node, at_s),
        payload={
            "state": state,
            "raw_state": raw_state or state,
            "reason": reason,
            "scheduler": "slurm",
        },
    )


def result(
    trigger: Trigger,
    at_s: float = 0.0,
    *,
    error: str | None = None,
    refused: bool = False,
    dry_run: bool = False,
    held_by: str | None = None,
) -> ActionSucceeded | ActionFailed:
    """What an action worker reports about `trigger`: succeeded, or failed with `error`.

    The id derives from the trigger and the outcome, so building it twice gives the same event
    (a redelivery). A shadow decision is only ever planned (`dry_run`), as the worker does."""
    dry_run = dry_run or trigger.payload.shadow
    common: dict[str, Any] = {
        "trigger_id": trigger.event_id,
        "trigger_type": trigger.type,
        "action": trigger.type.lower(),
        "dry_run": dry_run,
        "shadow": trigger.payload.shadow,
        "nodes": getattr(trigger.payload, "nodes", ()),
        "jobs": getattr(trigger.payload, "jobs", ()),
        "move_jobs": getattr(trigger.payload, "move_jobs", False),
        "operator": trigger.payload.operator,
        "reason": trigger.payload.reason,
        "decided_at": trigger.occurred_at,
        "forced": trigger.payload.force,
    }
    envelope_ = {
        **envelope(trigger.subject, at_s),
        "event_id": uuid.uuid5(trigger.event_id, f"{error}/{refused}/{dry_run}"),
        "source": "actions",
    }
    if error is None:
        return ActionSucceeded(**envelope_, payload=common)
    return ActionFailed(
        **envelope_,
        payload={
            **common,
            "error": error,
            "permanent": True,
            "refused": refused,
            "held_by": held_by,
        },
    )


class Story:
    """Events told to the brain in event-time order; what it decides, and the state it keeps.

    `rules`: your rule modules, loaded beside the built-ins as the worker loads them
    (`CENTRALITY_RULES`); `config`: per rule, as `CENTRALITY_STREAMS_RULE_CONFIG`. A mistake in
    either raises the `RuleConfigError` the worker would refuse to start with.
    """

    def __init__(
        self,
        rules: Iterable[str] = (),
        config: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        tick_interval_s: float = TICK_INTERVAL_S,
    ) -> None:
        self.brain = Brain(RuleEngine.load(rule_modules(rules), config or {}))
        self.clock = Clock(self.brain, tick_interval_s)
        self.decisions: list[Trigger] = []
        self._last: datetime | None = None

    def tell(self, *events: Event) -> list[Trigger]:
        """Fold `events` (none earlier than the one before), the clock ticking up to each;
        what they and the ticks decided, in order."""
        decided: list[Trigger] = []
        for event in events:
            self._advance(event.occurred_at)
            decided.extend(self._ticks(event.occurred_at))
            decided.extend(self.brain.handle(event))
        self.decisions.extend(decided)
        return decided

    def wait(self, until_s: float) -> list[Trigger]:
        """Let event time pass to `T0 + until_s` with nothing happening: what the ticks decide."""
        until = T0 + timedelta(seconds=until_s)
        self._advance(until)
        decided = self._ticks(until)
        self.decisions.extend(decided)
        return decided

    def _advance(self, at: datetime) -> None:
        if self._last is not None and at < self._last:
            raise ValueError(f"told out of order: {at.isoformat()} after {self._last.isoformat()}")
        self._last = at

    def _ticks(self, at: datetime) -> list[Trigger]:
        return [t for _, ticked in self.clock.until(at.timestamp()) for t in ticked]

    @property
    def jobs(self) -> dict[str, TrainingJob]:
        return self.brain.jobs

    @property
    def nodes(self) -> dict[str, Node]:
        return self.brain.nodes

    @property
    def node_sets(self) -> dict[str, NodeSet]:
        return self.brain.node_sets

    @property
    def incidents(self) -> dict[str, IncidentPayload]:
        """Every incident as the worker last published it, by id."""
        return {key: event.payload for key, event in self.brain.incidents.items()}


def decide(
    *events: Event,
    rules: Iterable[str] = (),
    config: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Trigger]:
    """What the brain decides on `events` alone: `Story(rules, config).tell(*events)`."""
    return Story(rules, config).tell(*events)
