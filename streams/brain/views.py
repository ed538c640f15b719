"""What people read about a node or a job, made from the very state the rules decide on.

`status_change` gives the event the streams app publishes on the `status` topic when what a
person would read changed: a heartbeat, a GPU sample or a rule's memo changes the table, not the
view, and publishes nothing. Pure, so a test reads the same view the live worker publishes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from schemas.envelope import Event, Payload
from schemas.events.status import (
    SHOWN_MAX,
    JobStatusChanged,
    JobStatusPayload,
    NodeStatusChanged,
    NodeStatusPayload,
)
from schemas.limits import MAP_ENTRIES, SMALL_LIST
from streams.brain.incident_view import incident_event_type, incident_view
from streams.rules.registry import RuleEngine
from streams.state.bounds import clip
from streams.state.condition import condition, condition_since
from streams.state.entities import INCIDENTS, JOBS, NODES, Kind
from streams.state.internal import derived_id
from streams.state.node import LOST_RULE, Node
from streams.state.story import Stage, Story, StoryEnd
from streams.state.training_job import TrainingJob

RESTART_RULE = "restart_incomplete_exit"
EventType = Callable[[Any, Any], type[Event]]

_PENDING = {
    Stage.DRAIN_REQUESTED: "drain requested",
    Stage.DRAINED: "benchmark to be decided",
    Stage.BENCHMARKING: "benchmark running",
    Stage.PASSED: "release to be decided",
    Stage.RELEASING: "release requested",
    Stage.KEPT: "a person: release or repair",
    Stage.BENCHMARK_FAILED: "a person: benchmark or release",
    Stage.RELEASE_FAILED: "a person: release",
    Stage.HELD: "an operator's release",
    Stage.RESETTING: "GPU reset running",
    Stage.RESET: "validation to be decided",
    Stage.REBOOT_REQUESTED: "reboot requested",
    Stage.REBOOTING: "the node back from its reboot",
    Stage.REBOOTED: "validation to be decided",
    Stage.RUNG_FAILED: "the next rung to be decided",
    Stage.ESCALATING: "escalation to a person",
    Stage.ESCALATED: "hardware service, then a release",
    Stage.ESCALATION_FAILED: "a person: repair or release",
}
# The rung a stage is on; a story on no ladder shows none.
_RUNG = {
    Stage.BENCHMARKING: "validate",
    Stage.BENCHMARK_FAILED: "validate",
    Stage.KEPT: "validate",
    Stage.RESETTING: "reset",
    Stage.RESET: "reset",
    Stage.REBOOT_REQUESTED: "reboot",
    Stage.REBOOTING: "reboot",
    Stage.REBOOTED: "reboot",
    Stage.ESCALATING: "escalate",
    Stage.ESCALATED: "escalate",
    Stage.ESCALATION_FAILED: "escalate",
}


# Every field of a node that `node_status` reads, through `condition` and the node's properties
# too. A heartbeat or a GPU sample changes the node's table, none of these: the view is then
# left unbuilt (two payloads a message, most of a node's messages). A test reads what the view
# touches over whole stories and holds this set to it.
NODE_VIEW_READS = (
    "story",
    "scheduler",
    "lost",
    "ended",
    "story_ended_at",
    "jobs",
    "gpu_count",
    "facts",
    "episodes",
    "last_benchmark_verdict",
    "last_benchmark_at",
    "incident",
)


def node_status(node: Node) -> NodeStatusPayload:
    story, scheduler = node.story, node.scheduler
    jobs = tuple(node.jobs)
    common: dict[str, Any] = {
        "state": condition(node),
        "since": condition_since(node),
        "scheduler_state": scheduler.raw_state if scheduler else None,
        "scheduler_reason": scheduler.reason if scheduler else None,
        "gpus": node.gpu_count if node.gpu_count is not None else node.facts.gpu_count,
        "gpu_model": node.facts.gpu_model,
        "partitions": node.facts.partitions[:SHOWN_MAX],
        "features": node.facts.features[:SHOWN_MAX],
        "labels": dict(list(node.facts.labels.items())[:MAP_ENTRIES]),
        "jobs": jobs[:SHOWN_MAX],
        "jobs_running": len(jobs),
        "episodes": node.episodes,
        "last_benchmark": node.last_benchmark_verdict,
        "last_benchmark_at": node.last_benchmark_at,
        "incident": node.incident,
    }
    if story is not None:
        return NodeStatusPayload(
            why=clip(story.why),
            by=story.decided_by,
            stage=story.stage.value,
            pending="drain: its turn in a batch"
            if node.waiting_turn
            else _PENDING.get(story.stage),
            problem=story.problem,
            **_ladder(story),
            **common,
        )
    if node.out_of_service_by_scheduler and scheduler is not None:
        return NodeStatusPayload(why=scheduler.reason, by="scheduler", **common)
    if node.lost is not None:
        return NodeStatusPayload(why=node.lost.why, by=LOST_RULE, **common)
    ended = node.ended
    return NodeStatusPayload(
        why=None if ended is None else clip(_back(ended)),
        by=None if ended is None else ended.by,
        **common,
    )


def _back(ended: StoryEnd) -> str:
    """How a node came back, in whose words, and why it had been out."""
    words = ended.words or ended.scheduler_reason
    return f"{ended.how}{f': {words}' if words else ''} (out for: {ended.reason})"


def _ladder(story: Story) -> dict[str, Any]:
    if story.ladder is None and not story.rungs:
        return {}
    rung = _RUNG.get(story.stage)
    if rung is None and story.stage is Stage.RUNG_FAILED and story.rungs:
        rung = story.rungs[-1].rung
    return {
        "rung": rung,
        "ladder": tuple(clip(r.told(), 512) for r in story.rungs)[-SMALL_LIST:],
        "rungs_left": tuple(story.ladder or ())[:SMALL_LIST],
    }


def restart_budget(engine: RuleEngine, job: TrainingJob) -> int | None:
    """How many restarts the restart rule allows `job` (its job class's scope, else the rule's
    own); None when it is not loaded, or off or only in shadow there (it restarts nothing)."""
    for bound in engine.rules:
        if bound.spec.name == RESTART_RULE:
            config = bound.config_for(job)
            if config.enabled and config.mode == "live":
                return int(getattr(config, "max_restarts", 0))
    return None


def job_status(job: TrainingJob, max_restarts: int | None) -> JobStatusPayload:
    last = job.restarts[-1] if job.restarts else None
    pending, why = None, None
    if last is not None and last.attempt >= job.attempt:
        pending = {"requested": "requeue requested", "requeued": "next attempt"}.get(last.outcome)
        why = f"restart after attempt {last.attempt}: {last.outcome}" + (
            f" ({last.error})" if last.error else ""
        )
    # The restart rule's budget counts attempts: each attempt after the first spent a restart,
    # and so did a requeue whose attempt has not been seen yet.
    used = max(job.attempt - 1, 0) + (pending is not None)
    return JobStatusPayload(
        state=job.state,
        since=job.running_since or job.ended_at or job.submitted_at,
        attempt=job.attempt,
        restarts_used=used,
        restarts_left=None if max_restarts is None else max(0, max_restarts - used),
        pending=pending,
        pending_since=last.at if pending is not None and last is not None else None,
        why=why,
        checkpoint_step=job.last_checkpoint_step,
        checkpoint_uri=job.last_checkpoint_uri,
        checkpoint_at=job.last_checkpoint_at,
        nodes=job.nodes[:SHOWN_MAX],
        nodes_count=len(job.nodes),
        last_signal=job.last_signal,
        last_signal_at=job.last_signal_at,
        failures=job.failures,
        preemptions=job.preemptions,
        goodput=job.goodput,
    )


@dataclass(frozen=True)
class View:
    make: Callable[[Any], Payload]
    event_type: EventType  # the event to publish, given the states before and after
    reads: tuple[str, ...] | None = None  # the state's fields `make` reads, where known

    def unchanged(self, before: Any, after: Any) -> bool:
        """Cheaply known to read the same: none of the fields it reads was replaced."""
        reads = self.reads
        return reads is not None and all(getattr(before, f) is getattr(after, f) for f in reads)


class Views:
    """The views of the kinds people read, bound to what they need of the rules' config."""

    def __init__(self, engine: RuleEngine) -> None:
        self._views: dict[str, View] = {
            NODES.table: View(node_status, lambda _b, _a: NodeStatusChanged, NODE_VIEW_READS),
            JOBS.table: View(
                lambda job: job_status(job, restart_budget(engine, job)),
                lambda _b, _a: JobStatusChanged,
            ),
            INCIDENTS.table: View(incident_view, incident_event_type),
        }

    def status_change(self, kind: Kind, before: Any, after: Any, cause: Event) -> Event | None:
        """The event to publish after `cause` turned `before` into `after` (on the topic its
        type names: `status`, `incidents`); None when the kind has no view or the view did not
        change."""
        view = self._views.get(kind.table)
        if view is None or (before is not None and view.unchanged(before, after)):
            return None
        now = view.make(after)
        if before is not None and view.make(before) == now:
            return None
        return view.event_type(before, after).model_validate(
            {
                "event_id": derived_id("status", kind.table, after.key, cause.event_id),
                "source": "streams",
                "cluster": after.cluster,
                "subject": after.key,
                "occurred_at": cause.occurred_at,
                "payload": now,
            }
        )
