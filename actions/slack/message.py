"""A message for Slack: its fallback text, its Block Kit blocks, and how a digest tells it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Message:
    text: str  # what notifications and clients without blocks show
    blocks: list[dict[str, Any]] = field(default_factory=list)
    # One line for a digest: `{nodes}` is filled with the nodes of every message of the digest
    # with the same line, folded into a hostlist (`Drained {nodes}` for 300 drains: one line).
    line: str = ""
    nodes: tuple[str, ...] = ()

    @property
    def digest_line(self) -> str:
        return self.line or self.text.split("\n", 1)[0]
