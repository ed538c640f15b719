"""A rule's decision that does not validate (a text or a list past the contract's limits).

Rules cap what they build (`schemas.limits.listed`, `capped`), but one that still builds an
invalid trigger must not take the event's fold down with it: the state would never move on, the
message would be dead-lettered live and `centrality replay` would stop there. The decision is
dropped and told, and the event's other rules decide as usual.
"""

from __future__ import annotations

import structlog
from pydantic import ValidationError

from schemas.envelope import Event

log = structlog.get_logger("streams")


def decision_invalid(rule: str, event: Event, exc: ValidationError) -> None:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'trigger'}: {e['msg']}" for e in exc.errors()
    )
    log.error(
        "decision_invalid",
        rule=rule,
        event_type=event.type,
        event_id=str(event.event_id),
        subject=event.subject,
        problems=problems[:1024],
    )
