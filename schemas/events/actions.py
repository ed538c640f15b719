"""Action results: what a worker did about a trigger, so the audit trail is events too."""

import uuid
from typing import Any, Literal

from pydantic import Field

from schemas.envelope import Event, Payload
from schemas.registry import event


class ActionPayload(Payload):
    trigger_id: uuid.UUID
    trigger_type: str
    action: str = Field(description="The handler that acted, e.g. `restart_job`.")
    attempt: int = Field(default=1, ge=1)
    dry_run: bool = False


class ActionStartedPayload(ActionPayload):
    pass


class ActionSucceededPayload(ActionPayload):
    detail: dict[str, Any] = Field(default_factory=dict, description="What was done.")


class ActionFailedPayload(ActionPayload):
    error: str
    permanent: bool


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
