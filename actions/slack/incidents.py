"""An incident in Block Kit: its thread's parent (what it is now, updated in place as it moves)
and the replies for the steps people must see: a refusal, its notes (a node kept out, escalated,
held, resumed by hand), its resolution."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from actions.slack.kit import Block, context, cut, fields, header, section
from actions.slack.message import Message
from actions.slack.words import duration, plain_time, plural, when
from schemas.events.incidents import IncidentPayload

_TEXT_CHARS = 2900
_BACK = "in_service"
# Settled without being taken out: a drain held by a silence or that failed leaves the node in
# service, so a resolution must not count it as kept out.
_LEFT_IN = frozenset({"held", "suspect"})
_WORDS = {_BACK: "back in service"}


def parent_message(incident: str, p: IncidentPayload) -> Message:
    resolved = p.state == "resolved"
    title = f"Resolved: {p.title}" if resolved else p.title
    state = f"open since {when(p.opened_at)}"
    if p.resolved_at is not None and resolved:
        after = duration(_s(p.opened_at, p.resolved_at))
        state = f"resolved {when(p.resolved_at)}, after {after}"
    blocks: list[Block] = [
        header(title),
        section(f"*{plural(p.nodes_count, 'node')}:* `{p.nodes or '-'}`"),
        fields(
            f"*State*\n{state}",
            f"*Severity*\n{p.severity}",
            f"*Domain*\n{p.domain}",
            f"*Window*\n{_window(p)}",
            f"*Members now*\n{members(p.states)}",
            f"*Decided by*\n{', '.join(p.decided_by) or 'no rule yet'}",
        ),
        section(f"*Cause:* {p.cause}"),
    ]
    if p.refused:
        blocks.append(section(f"*Refused:* {p.refused}"))
    if p.held_by:
        blocks.append(section(f"*Held by:* {', '.join(f'silence `{s}`' for s in p.held_by)}"))
    if p.jobs:
        blocks.append(section(f"*Jobs on its nodes at the fault:* {_listed(p.jobs)}"))
    blocks.append(context(*more(incident, p)))
    text = f"{title} ({'resolved' if resolved else 'open'}, {members(p.states)})"
    return Message(cut(text, _TEXT_CHARS), blocks, line=f"`{incident}` {title}")


def refused_message(incident: str, p: IncidentPayload) -> Message:
    said = f"*Not every node was taken out.* {p.refused}"
    return _reply(incident, p, said, f"{p.title}: refused — {p.refused}")


def notes_message(incident: str, p: IncidentPayload, before: int) -> Message:
    """The incident's notes past the `before` first, in one reply: a kept-out verdict, a step
    that failed, an escalation, a hold, what people did by hand. Notes the incident no longer
    keeps (it keeps its latest) are counted, not lost without a word."""
    new = p.notes_count - before
    shown = p.notes[-min(new, len(p.notes)) :] if new > 0 else ()
    lines = [f"• {n}" for n in shown]
    if new > len(shown):
        lines.insert(0, f"… and {new - len(shown)} earlier: `centrality incident {incident}`")
    said = f"*{plural(new, 'step')} to see:*\n" + "\n".join(lines)
    first = shown[0] if shown else ""
    return _reply(incident, p, said, f"{p.title}: {first}" + (f" (+{new - 1})" if new > 1 else ""))


def resolved_message(incident: str, p: IncidentPayload) -> Message:
    back = p.states.get(_BACK, 0)
    left = {s: n for s, n in p.states.items() if s in _LEFT_IN and n}
    kept = {s: n for s, n in p.states.items() if s != _BACK and s not in _LEFT_IN and n}
    said = f"*Resolved* {when(p.resolved_at or p.last_fault_at)}: {back} back in service"
    if left:
        said += f"; {sum(left.values())} left in service undrained ({members(left)})"
    if kept:
        said += f"; {sum(kept.values())} kept out of service ({members(kept)})"
    return _reply(incident, p, said + ".", f"Resolved: {p.title}")


def members(states: Mapping[str, int]) -> str:
    """Members by their node state now, most first: `unreachable 140 · back in service 3`."""
    shown = sorted(((n, s) for s, n in states.items() if n), key=lambda ns: (-ns[0], ns[1]))
    return " · ".join(f"{_WORDS.get(s, s.replace('_', ' '))} {n}" for n, s in shown) or "none"


def more(incident: str, p: IncidentPayload) -> list[str]:
    see = [f"more: `centrality incident {incident}`"]
    if p.nodes and "…" not in p.nodes:
        see.append(f"`centrality nodes '{p.nodes}'`")
    return [*see, f"incident `{incident}`"]


def _reply(incident: str, p: IncidentPayload, said: str, text: str) -> Message:
    blocks = [section(said), context(*more(incident, p))]
    return Message(cut(text, _TEXT_CHARS), blocks, line=f"`{incident}` {cut(text, 200)}")


def _window(p: IncidentPayload) -> str:
    spread = _s(p.first_fault_at, p.last_fault_at)
    if spread < 1:
        return f"{when(p.first_fault_at)}"
    return f"{when(p.first_fault_at)} to {plain_time(p.last_fault_at)} ({duration(spread)})"


def _s(start: datetime, end: datetime) -> float:
    return (end - start).total_seconds()


def _listed(items: tuple[str, ...]) -> str:
    return ", ".join(f"`{i}`" for i in items[:10]) + (
        f" and {len(items) - 10} more" if len(items) > 10 else ""
    )
