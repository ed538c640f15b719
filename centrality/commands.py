"""Operators' commands: the same triggers rules decide, naming the operator who gave them.

An operator's trigger has a fresh id (a person may ask twice), the rule `operator`, no causes,
and is signed with the operator's key (`schemas.operators`): the action worker carries it out
through the same ledger, breakers and results as a rule's decision, and refuses it when the
operator may not command the trigger's cluster. A command without a reason is never made.
"""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

from schemas.envelope import utcnow
from schemas.events import Trigger, trigger_id

OPERATOR_RULE = "operator"
T = TypeVar("T", bound=Trigger)


def checked_reason(reason: str) -> str:
    """The reason people will read, stripped; ValueError when there is none to read."""
    if not reason or not reason.strip():
        raise ValueError("a command needs a reason people can read: it is recorded and shown")
    return reason.strip()


def command(
    cls: type[T],
    *,
    operator: str,
    cluster: str,
    subject: str,
    reason: str,
    force: bool = False,
    **payload: Any,
) -> T:
    window = uuid.uuid4().hex
    type_name = cls.model_fields["type"].default
    return cls.model_validate(
        {
            "event_id": trigger_id(type_name, OPERATOR_RULE, subject, window),
            "source": f"operator/{operator}",
            "cluster": cluster,
            "subject": subject,
            "occurred_at": utcnow(),
            "payload": {
                "rule": OPERATOR_RULE,
                "window": window,
                "reason": checked_reason(reason),
                "caused_by": (),
                "operator": operator,
                "force": force,
                **payload,
            },
        }
    )
