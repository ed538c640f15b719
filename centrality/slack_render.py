"""Slack Block Kit in a terminal, as Slack lays it out: the demo shows what people were told.

Covers the blocks Centrality posts (header, section with mrkdwn text or fields, context,
divider) and mrkdwn's inline marks; a date token shows its fallback (the time in UTC); an
unknown block is shown as its type, never dropped. A thread is its parent as people see it now
(how many times it was edited) and its replies under it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.padding import Padding
from rich.panel import Panel
from rich.rule import Rule
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from centrality.slack_fake import Message

_INLINE = (
    (re.compile(r"<!date\^[^|>]+\|([^>]+)>"), r"\1"),  # its fallback: the time in UTC
    (re.compile(r"`([^`\n]+)`"), r"[bold magenta]\1[/]"),
    (re.compile(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])"), r"[bold]\1[/]"),
    (re.compile(r"(?<![\w_])_([^_\n]+)_(?![\w_])"), r"[italic]\1[/]"),
    (re.compile(r"(?<![\w~])~([^~\n]+)~(?![\w~])"), r"[strike]\1[/]"),
    (re.compile(r"<([^|>]+)\|([^>]+)>"), r"[underline]\2[/]"),
)


def mrkdwn(text: str) -> RenderableType:
    """Slack's mrkdwn: ``` blocks verbatim, inline marks as rich styles."""
    parts: list[RenderableType] = []
    for i, chunk in enumerate(text.split("```")):
        if i % 2:
            parts.append(Syntax(chunk.strip("\n"), "text", theme="ansi_dark", word_wrap=False))
        elif chunk.strip("\n"):
            marked = escape(chunk.strip("\n"))
            for pattern, style in _INLINE:
                marked = pattern.sub(style, marked)
            parts.append(Text.from_markup(marked))
    return Group(*parts)


def _text(obj: Mapping[str, Any] | None) -> RenderableType:
    if not obj:
        return Text("")
    raw = str(obj.get("text", ""))
    return mrkdwn(raw) if obj.get("type") == "mrkdwn" else Text(raw)


def _block(block: Mapping[str, Any]) -> RenderableType:
    kind = block.get("type")
    if kind == "header":
        return Text(str((block.get("text") or {}).get("text", "")), style="bold underline")
    if kind == "section":
        parts = [_text(block.get("text"))]
        fields = block.get("fields") or []
        if fields:
            grid = Table.grid(padding=(0, 2))
            grid.add_column()
            grid.add_column()
            cells = [_text(f) for f in fields]
            for left, right in zip(cells[::2], [*cells[1::2], Text("")], strict=False):
                grid.add_row(left, right)
            parts.append(grid)
        return Group(*parts)
    if kind == "context":
        return Padding(Group(*(_text(e) for e in block.get("elements") or [])), 0, style="dim")
    if kind == "divider":
        return Rule(style="dim")
    return Text(f"[{kind} block]", style="dim")


def render_message(channel: str, blocks: Iterable[Mapping[str, Any]], text: str) -> Panel:
    """One posted message as a Slack-like card: its blocks, or its fallback text without any."""
    body = [_block(b) for b in blocks] or [mrkdwn(text)]
    return Panel(Group(*body), title=f"Slack {channel}", title_align="left", border_style="cyan")


def render_thread(channel: str, thread: Sequence[Message]) -> Panel:
    """A thread as people see it now: its parent (edited in place, maybe), its replies."""
    parent, *replies = thread
    body: list[RenderableType] = [_block(b) for b in parent.blocks] or [mrkdwn(parent.text)]
    for reply in replies:
        said = [_block(b) for b in reply.blocks] or [mrkdwn(reply.text)]
        body.append(Padding(Group(Rule(style="dim"), *said), (0, 0, 0, 4)))
    edited = f", edited {parent.edits} times" if parent.edits else ""
    answers = f", {len(replies)} replies" if replies else ""
    title = f"Slack #{channel}{edited}{answers}"
    return Panel(Group(*body), title=title, title_align="left", border_style="cyan")
