"""Block Kit blocks cut to Slack's limits: a header's text 150 characters, a section's 3,000, a
field's 2,000, ten fields or context elements (docs.slack.dev/reference/block-kit/blocks)."""

from __future__ import annotations

from typing import Any

HEADER_CHARS = 150
SECTION_CHARS = 3000
FIELD_CHARS = 2000
ELEMENTS_MAX = 10

Block = dict[str, Any]


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def header(text: str) -> Block:
    return {"type": "header", "text": {"type": "plain_text", "text": cut(text, HEADER_CHARS)}}


def section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": cut(text, SECTION_CHARS)}}


def fields(*texts: str) -> Block:
    shown = [{"type": "mrkdwn", "text": cut(t, FIELD_CHARS)} for t in texts[:ELEMENTS_MAX]]
    return {"type": "section", "fields": shown}


def context(*texts: str) -> Block:
    shown = [{"type": "mrkdwn", "text": cut(t, SECTION_CHARS)} for t in texts[:ELEMENTS_MAX]]
    return {"type": "context", "elements": shown}
