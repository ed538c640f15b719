"""What Slack was told of an incident: where its thread is and which steps were replied (the
teller's `Told` record, from the action ledger), and its parent message as the teller renders
it from the incident (the same pure function, so the page shows what the thread shows)."""

from __future__ import annotations

from typing import Any

from actions.ledger import Told
from actions.slack.incidents import parent_message
from schemas.events.incidents import IncidentEvent


def _texts(block: Any) -> list[str]:
    """The text of a Block Kit block, its fields' and elements' in order."""
    if isinstance(block, dict):
        text = block.get("text")
        own = [text] if isinstance(text, str) else _texts(text) if text else []
        return own + [t for key in ("fields", "elements") for t in _texts(block.get(key, []))]
    if isinstance(block, list):
        return [t for item in block for t in _texts(item)]
    return []


def told_of(incident: IncidentEvent, told: Told | None) -> dict[str, Any] | None:
    if told is None:
        return None
    steps = ["the parent message, kept up to date in place"]
    if told.refused:
        steps.append("a reply: the circuit breaker's refusal, with its figures")
    if told.notes:
        steps.append(f"replies: {told.notes} note(s) people must see")
    if told.resolved:
        steps.append("a reply: the resolution")
    where = f"{told.thread.channel} (thread {told.thread.ts})" if told.thread else None
    message = parent_message(incident.subject, incident.payload)
    return {
        "at": told.told_at.isoformat(),
        "where": "a digest's thread" if told.digest else where,
        "steps": steps,
        "parent": _texts(message.blocks) or [message.text],
    }
