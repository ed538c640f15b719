"""What to tell of an incident, given what was told of it before: a pure function, so the
teller's policy is the same in tests and in the worker.

The parent message is shown when what it shows changed (posted the first time, then updated
in place); a reply goes out once per step people must see: the refusal (with its figures), the
notes new since the last reply (in one), the resolution. An incident whose parent is a
digest's has no message of its own to update: only its replies go on, in the digest's thread.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Literal

from actions.ledger import ThreadRef, Told
from actions.slack.incidents import (
    notes_message,
    parent_message,
    refused_message,
    resolved_message,
)
from actions.slack.message import Message
from actions.slack.notifier import Delivery
from schemas.envelope import utcnow
from schemas.events.incidents import IncidentPayload

Step = Literal["refused", "notes", "resolved"]


@dataclass(frozen=True)
class Reply:
    step: Step
    message: Message


@dataclass(frozen=True)
class Telling:
    incident: str
    parent: Message | None  # None: it shows what was last shown, or has no message of its own
    fingerprint: str
    replies: tuple[Reply, ...]
    notes: int  # the incident's notes once told

    @property
    def empty(self) -> bool:
        return self.parent is None and not self.replies


def telling(incident: str, p: IncidentPayload, told: Told | None) -> Telling:
    told = told or Told(incident=incident)
    parent = parent_message(incident, p)
    fingerprint = hashlib.sha256(json.dumps(parent.blocks).encode()).hexdigest()[:32]
    shown = told.digest or told.parent == fingerprint
    replies: list[Reply] = []
    if p.refused and not told.refused:
        replies.append(Reply("refused", refused_message(incident, p)))
    if p.notes_count > told.notes:
        replies.append(Reply("notes", notes_message(incident, p, told.notes)))
    if p.state == "resolved" and not told.resolved:
        replies.append(Reply("resolved", resolved_message(incident, p)))
    return Telling(incident, None if shown else parent, fingerprint, tuple(replies), p.notes_count)


def told_after(
    told: Told | None,
    plan: Telling,
    parent: Delivery | None,
    replies: list[Delivery],
    thread: ThreadRef | None,
    digest: bool,
) -> Told:
    """What was told once `plan` was carried out: a step that was not told stays untold."""
    told = told or Told(incident=plan.incident)
    done = {r.step for r, d in zip(plan.replies, replies, strict=True) if d.told}
    return told.model_copy(
        update={
            "thread": thread or told.thread,
            "digest": digest or told.digest,
            "parent": plan.fingerprint if parent is None or parent.told else told.parent,
            "refused": told.refused or "refused" in done,
            "notes": plan.notes if "notes" in done else told.notes,
            "resolved": told.resolved or "resolved" in done,
            "told_at": utcnow(),
        }
    )
