"""Checkpoint notices from training code or a checkpoint-directory watcher."""

from typing import Literal

from pydantic import Field

from schemas.envelope import Event, Payload
from schemas.limits import INT64_MAX, TEXT
from schemas.registry import event


class CheckpointSavedPayload(Payload):
    step: int = Field(ge=0, le=INT64_MAX)
    uri: str = Field(min_length=1, max_length=TEXT)
    epoch: int | None = Field(default=None, ge=0, le=INT64_MAX)
    size_bytes: int | None = Field(default=None, ge=0, le=INT64_MAX)
    duration_s: float | None = Field(default=None, ge=0)


@event(topic="jobs")
class CheckpointSaved(Event):
    type: Literal["CheckpointSaved"] = "CheckpointSaved"
    payload: CheckpointSavedPayload
