"""A digest: the messages a channel could not take in time, told together in one message.

Messages with the same one-line summary share a line, their nodes folded (`Drained gpu-[001-300]`);
lines keep the order their first message came in. The digest fits Slack's limits whatever it
holds: past `_LINES_MAX` lines, or `_TEXT_MAX` characters, the rest is counted, not listed.
"""

from __future__ import annotations

from collections.abc import Sequence

from actions.slack.kit import Block, context, cut, header, section
from actions.slack.message import Message
from actions.slack.words import fold, plural

_LINES_MAX = 60
_LINE_CHARS = 300
_SECTION_CHARS = 2800  # a section's text holds 3,000
_TEXT_MAX = 10_000  # every text of the message together; Slack refuses near 13,200
_MORE = "`centrality incidents` lists every incident; `centrality incident ID` tells one."


def digest_message(messages: Sequence[Message], rate_per_s: float) -> Message:
    lines = _lines(messages)
    shown, size = [], 0
    for line in lines[:_LINES_MAX]:
        if size + len(line) > _TEXT_MAX:
            break
        shown.append(line)
        size += len(line) + 1
    if left := len(lines) - len(shown):
        shown.append(f"…and {plural(left, 'more line')}.")
    title = f"{plural(len(messages), 'message')} at once, told together"
    pace = f"one message every {1 / rate_per_s:g} s" if rate_per_s < 1 else "one message a second"
    blocks: list[Block] = [
        header(title),
        context(f"Slack takes {pace} in a channel; these came faster."),
        *(section(text) for text in _sections(shown)),
        context(_MORE),
    ]
    text = f"{title}: " + "; ".join(shown[:3]) + ("; …" if len(shown) > 3 else "")
    return Message(text=text[:_SECTION_CHARS], blocks=blocks)


def _lines(messages: Sequence[Message]) -> list[str]:
    groups: dict[str, list[Message]] = {}
    for message in messages:
        groups.setdefault(message.digest_line, []).append(message)
    lines = []
    for line, group in groups.items():
        nodes = [n for m in group for n in m.nodes]
        told = line.replace("{nodes}", fold(nodes)) if "{nodes}" in line else line
        times = f" ({len(group)} times)" if len(group) > 1 and "{nodes}" not in line else ""
        lines.append("• " + cut(told, _LINE_CHARS - len(times)) + times)
    return lines


def _sections(lines: list[str]) -> list[str]:
    sections, current = [], ""
    for line in lines:
        if current and len(current) + len(line) + 1 > _SECTION_CHARS:
            sections.append(current)
            current = ""
        current = f"{current}\n{line}" if current else line
    return [*sections, current] if current else sections
