"""A silence's end in Block Kit: the one message people get when a silence ends, listing what it
held, and that rules decide afresh now (nothing held is carried out after it)."""

from __future__ import annotations

from actions.holds import Held
from actions.silences import Silence
from actions.slack.kit import context, cut, header, section
from actions.slack.message import Message
from actions.slack.words import fold, label, plural, when

_TEXT_CHARS = 2900
_JOBS_SHOWN = 10
_AFRESH = (
    "*Rules decide afresh now:* nothing it held is carried out; the next fault is a new "
    "decision, carried out as usual."
)


def ended_message(silence: Silence, held: Held | None) -> Message:
    s = silence
    ended = f"It ran out {when(s.ends_at)}."
    if s.ended_by:
        why = f": {s.end_reason}" if s.end_reason else ""
        ended = f"*{s.ended_by}* ended it {when(s.ends_at)}{why}."
    said = (
        f"*Silence* `{s.silence_id}` on cluster `{s.cluster}` ({scope(s)}), set by "
        f"*{s.operator}*: {s.reason}\n{ended}"
    )
    blocks = [
        header(f"Silence {s.silence_id} ended: rules decide afresh"),
        section(said),
        section(held_words(held)),
        section(_AFRESH),
        context(
            f"more: `centrality silence list --all --cluster {s.cluster}`",
            f"silence `{s.silence_id}`",
        ),
    ]
    count = plural(held.decisions if held is not None else 0, "decision")
    on = f" ({_on(held)})" if held is not None else ""
    text = f"Silence {s.silence_id} on {s.cluster} ended; it held {count}{on}; rules decide afresh"
    nodes = tuple(sorted(held.nodes)) if held is not None else ()
    line = f"Silence `{s.silence_id}` ended, {count} held on {{nodes}}" if nodes else ""
    return Message(cut(text, _TEXT_CHARS), blocks, line=line, nodes=nodes)


def scope(silence: Silence) -> str:
    """What a silence covers, in words: `nodes gpu-[01-08], rule fatal_xid` or `everything`."""
    parts = []
    if silence.nodes is not None:
        parts.append(f"nodes `{fold(silence.nodes)}`")
    if silence.rule is not None:
        parts.append(f"rule `{silence.rule}`")
    if silence.action is not None:
        parts.append(f"action `{silence.action}`")
    return ", ".join(parts) or "every rule's decisions"


def held_words(held: Held | None) -> str:
    if held is None or not held.decisions:
        return "*It held nothing:* no rule decided anything it covers while it lasted."
    actions = ", ".join(f"{label(a)} ({n})" for a, n in held.actions.most_common())
    rules = ", ".join(f"`{r}` ({n})" for r, n in held.rules.most_common())
    lines = [f"*It held {plural(held.decisions, 'decision')}:* {actions}", f"*Rules:* {rules}"]
    if held.nodes:
        lines.append(f"*Nodes:* `{fold(held.nodes)}` ({plural(len(held.nodes), 'node')})")
    if held.jobs:
        jobs = sorted(held.jobs)
        shown = ", ".join(f"`{j}`" for j in jobs[:_JOBS_SHOWN])
        more = f" and {len(jobs) - _JOBS_SHOWN} more" if len(jobs) > _JOBS_SHOWN else ""
        lines.append(f"*Jobs:* {shown}{more}")
    return "\n".join(lines)


def _on(held: Held) -> str:
    on = [fold(held.nodes, 200)] if held.nodes else []
    return ", ".join([*on, *([plural(len(held.jobs), "job")] if held.jobs else [])])
