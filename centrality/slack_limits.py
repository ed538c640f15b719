"""What Slack accepts in a message, as the Slack fake checks it.

Block Kit is checked with slack_sdk's own block models: every block must parse to its model,
pass the model's validators (a section's text at most 3,000 characters, a header's 150, at most
10 fields or context elements, ...) and come back from it unchanged, so an unknown block type, an
unknown or malformed field is refused as Slack refuses it (`invalid_blocks`). Beyond the models:

- at most 50 blocks in a message (docs.slack.dev/reference/block-kit/blocks);
- a header's text is `plain_text` (docs.slack.dev/reference/block-kit/blocks/header-block);
- the text of all blocks together: undocumented; Slack answers `msg_blocks_too_long` past about
  13,200 characters (slackapi/bolt-js#2509 measured 13,297 with markdown blocks alone, less
  once other blocks are added; a maintainer there: 12,000 characters of text plus a buffer for
  the blocks' containers). The fake refuses past `BLOCKS_TEXT_MAX`;
- a message's `text`: `msg_too_long` past 40,000 characters (docs.slack.dev/reference/methods/
  chat.postMessage: longer messages are truncated, the method refuses them with that error);
- a message needs `text` or blocks (`no_text`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block

BLOCKS_MAX = 50
BLOCKS_TEXT_MAX = 13_200
TEXT_MAX = 40_000


class Refused(Exception):
    """Slack's answer to a message it does not take: its error code, and what it says of it."""

    def __init__(self, error: str, *details: str) -> None:
        super().__init__(error)
        self.error = error
        self.details = list(details)


def check_message(text: Any, blocks: Any) -> None:
    """Raise `Refused` where Slack would refuse the message."""
    if blocks in (None, "", []):
        if not isinstance(text, str) or not text:
            raise Refused("no_text")
    else:
        check_blocks(blocks)
    if isinstance(text, str) and len(text) > TEXT_MAX:
        raise Refused("msg_too_long")


def check_blocks(blocks: Any) -> None:
    if not isinstance(blocks, list):
        raise Refused("invalid_blocks_format", "blocks must be an array")
    if len(blocks) > BLOCKS_MAX:
        raise Refused("invalid_blocks", f"no more than {BLOCKS_MAX} items allowed [/blocks]")
    for i, block in enumerate(blocks):
        if (why := _invalid(block)) is not None:
            raise Refused("invalid_blocks", f"{why} [/blocks/{i}]")
    total = sum(len(t) for t in _texts(blocks))
    if total > BLOCKS_TEXT_MAX:
        raise Refused("msg_blocks_too_long", f"{total} characters of text in blocks")


def _invalid(block: Any) -> str | None:
    if not isinstance(block, dict):
        return "a block must be an object"
    parsed = Block.parse(dict(block))
    if parsed is None:
        return f"unsupported type: {block.get('type')}"
    try:
        if parsed.to_dict() != block:  # a field the model does not know, or not of its form
            return f"unknown or malformed field in a {block.get('type')} block"
    except SlackObjectFormationError as exc:
        return str(exc)
    if block["type"] == "header" and block["text"].get("type") != "plain_text":
        return "a header's text must be plain_text"
    return None


def _texts(value: Any) -> Iterator[str]:
    """Every `text` string of a block tree."""
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "text" and isinstance(inner, str):
                yield inner
            else:
                yield from _texts(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _texts(inner)
