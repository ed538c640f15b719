"""Output for people: what a value reads as, and where tables go.

A terminal gets rich tables at its width. A pipe or a file gets them whole, as wide as what they
hold (grep and less see every character), or tab-separated lines with `--tsv`. Values are said as
people write them, never as Python's repr: times in ISO 8601 with their zone, lists as lists.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

UNBOUNDED = 1_000_000  # columns: a table in a pipe is as wide as its widest row


def console() -> Console:
    """stdout: a terminal at its width; anything else never cut nor wrapped."""
    found = Console()
    return found if found.is_terminal else Console(width=UNBOUNDED)


def when(at: datetime | None, timespec: str = "seconds") -> str:
    """ISO 8601 in UTC with its zone: `2026-03-01T10:00:00Z` (`timespec` as `isoformat`'s)."""
    if at is None:
        return "-"
    zoned = at if at.tzinfo else at.replace(tzinfo=UTC)
    return zoned.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def age(at: datetime | None, now: datetime) -> str:
    """How long ago, roughly: `5m ago`."""
    if at is None:
        return "-"
    s = max(0, int((now - at).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit} ago"
    return f"{s}s ago"


def said(value: Any) -> str:
    """A value as people write it: `-` for none, lists joined by commas, mappings as
    `key=value` (nested keys dotted), times in ISO 8601."""
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return when(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={v}" for k, v in flat(value)) or "-"
    if isinstance(value, list | tuple | set | frozenset):
        return ", ".join(said(v) for v in value) or "-"
    return str(value)


def flat(mapping: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """`{"drain": {"nodes": ["n1"]}}` → `[("drain.nodes", "n1")]`."""
    out: list[tuple[str, str]] = []
    for key, value in mapping.items():
        if isinstance(value, Mapping) and value:
            out += flat(value, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", said(value)))
    return out


def cell(text: str) -> Text:
    """Data in a table cell: never read as rich markup (`gpu-[01-04]`, `[bold]` in a reason)."""
    return Text(text)


def table(columns: Sequence[str], rows: Iterable[Sequence[str]], **kw: Any) -> Table:
    found = Table(*columns, **kw)
    for row in rows:
        found.add_row(*(cell(c) for c in row))
    return found


def tsv(columns: Sequence[str] | None, rows: Iterable[Sequence[str]]) -> None:
    """Tab-separated lines on stdout (a header first when `columns`): tabs and line breaks in a
    value become spaces, so each row is one line."""
    lines = [columns] if columns is not None else []
    for line in (*lines, *rows):
        sys.stdout.write("\t".join(" ".join(c.split()) for c in line) + "\n")
    sys.stdout.flush()
