"""How fast a job steps: the step (iteration) times its trainer logs, summarised per rank.

A job runs at the pace of its slowest rank, so a host whose steps take longer than the job's
other hosts' is evidence against that host (docs/rules.md, `slow_node`). The log collector reads
the trainers' own lines (PyTorch Lightning, Megatron/NeMo, DeepSpeed, Hugging Face Trainer,
JAX/MaxText: `collectors/logs/steps.py`) and sends one summary per rank and interval, not one
event per step.
"""

from typing import Literal

from pydantic import Field

from schemas.envelope import Event, Payload
from schemas.limits import INT32_MAX, INT64_MAX, NODE_NAME, UINT32_MAX
from schemas.registry import event

# A day a step: anything slower is a stuck job, which `checkpoint_stall` and the hang rules see.
STEP_S_MAX = 86_400.0

Trainer = Literal["lightning", "megatron", "deepspeed", "hf", "maxtext", "other"]


class StepTimesObservedPayload(Payload):
    node: str = Field(min_length=1, max_length=NODE_NAME, description="The host they were read on.")
    rank: int | None = Field(
        default=None, ge=0, le=INT32_MAX, description="The rank, where the line or its prefix said."
    )
    steps: int = Field(ge=1, le=UINT32_MAX, description="How many step times this summarises.")
    median_s: float = Field(gt=0, le=STEP_S_MAX, description="Their median, seconds a step.")
    max_s: float = Field(gt=0, le=STEP_S_MAX, description="The slowest of them.")
    last_step: int | None = Field(default=None, ge=0, le=INT64_MAX, description="As logged.")
    trainer: Trainer = Field(default="other", description="Whose log format they were read in.")


@event(topic="jobs")
class StepTimesObserved(Event):
    """One rank's step times over an interval; `subject` is the job id."""

    type: Literal["StepTimesObserved"] = "StepTimesObserved"
    payload: StepTimesObservedPayload
