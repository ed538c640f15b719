"""A job tells its nodes how fast it goes (`NodeJobPaced`): each host whether its step times are
behind the other hosts' and whether the others wait for it at their collectives, every node the
job's slowdown against its best pace this attempt, and its checkpoints (when, where it resumes
from, how often). The node weighs this against its own GPUs'
signs of slowness (`slow_node`). Like every forward, it runs from the job to its nodes, never back:
a node's decision never reaches a job (`streams.brain.parts`).

Told only on a change of what a node would hear, rounded (`STEP`): a job logging every step of a
thousand hosts tells a host again when its standing moves, not every interval. A ratio is told
again only once it has moved past its told class by a quarter of a step (`HELD`): step times
jitter, and a slowdown hovering at a class's edge told every host of the job at every crossing.
"""

from __future__ import annotations

from schemas.envelope import Event
from schemas.events import CheckpointSaved, CollectivesTimed, StepTimesObserved
from streams.state.internal import NodeJobPaced, derived_id
from streams.state.pace import BEHIND, cadence_s, pace_s, slow_since
from streams.state.training_job import TrainingJob

STEP = 0.05  # ratios told to the nearest 5 %
HELD = 0.75 * STEP  # how far from the told class's middle a ratio may move untold
JOB = "*"  # `pace_told`'s key for the job-wide slowdown last told to every node


def reports(job: TrainingJob, event: Event, window_s: float) -> tuple[TrainingJob, list[Event]]:
    """What the job tells its nodes of its pace after `event`, and itself as it remembers that."""
    if not job.running or not isinstance(
        event, StepTimesObserved | CheckpointSaved | CollectivesTimed
    ):
        return job, []
    told_slowdown = job.pace_told.get(JOB)
    slowdown = _slowdown(job)
    job_word = _held(told_slowdown, slowdown)
    if isinstance(event, CheckpointSaved) or told_slowdown != job_word:
        nodes = job.nodes
    else:
        nodes = (event.payload.node,)
    told = dict(job.pace_told)
    out: list[Event] = []
    cadence = cadence_s(job.checkpoint_times)
    for node in nodes:
        if job.nodes and node not in job.nodes:
            continue  # a host name the job's scheduler does not know it by
        behind = slow_since(job.steps, node, BEHIND)
        ratio = behind[1] if behind else None
        waited = job.waits.waited.get(node)
        word = "|".join(
            (
                _held(told.get(node, "").partition("|")[0], ratio),
                job_word,
                str(job.last_checkpoint_step),
                _word(cadence),
                "waited" if waited else "-",  # its figures move with every interval
            )
        )
        if told.get(node) == word:
            continue
        told[node] = word
        payload = {
            "job_id": job.job_id,
            "attempt": job.attempt,
            "gpus": job.gpus,
            "nodes": len(job.nodes),
            "ratio": ratio,
            "behind_since": behind[0] if behind else None,
            "slowdown": slowdown,
            "checkpoint_at": job.last_checkpoint_at,
            "checkpoint_step": job.last_checkpoint_step,
            "cadence_s": cadence,
            "waited_since": waited.since if waited else None,
            "waited_ratio": waited.ratio if waited else None,
            "waited_ms": waited.wait_ms if waited else None,
            "waited_at": waited.collective if waited else None,
        }
        out.append(_paced(event, node, word, payload))
    told[JOB] = job_word
    return job.model_copy(update={"pace_told": told}), out


def _slowdown(job: TrainingJob) -> float | None:
    pace, best = pace_s(job.steps), job.pace_best_s
    return round(pace / best, 3) if pace and best else None


def _word(value: float | None) -> str:
    return "-" if value is None else f"{round(value / STEP) * STEP:.2f}"


def _held(told: str | None, value: float | None) -> str:
    """`value`'s word, or the one told while `value` stays within `HELD` of it."""
    if value is not None and told and told != "-" and abs(value - float(told)) <= HELD:
        return told
    return _word(value)


def _paced(event: Event, node: str, word: str, payload: dict[str, object]) -> NodeJobPaced:
    return NodeJobPaced(
        event_id=derived_id(event.event_id, node, word),
        source="streams",
        cluster=event.cluster,
        subject=node,
        occurred_at=event.occurred_at,
        payload=payload,
    )
