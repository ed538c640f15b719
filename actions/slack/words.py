"""Values as people read them in Slack: times with their zone, node lists folded, details as words.

Never a Python repr or JSON: a mapping is `key value; key value`, a list of names a hostlist.
Times are Slack date tokens (each reader sees their own zone), with the time in UTC, its zone
named, for any client that cannot show the token.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import hostlist

NODES_MAX_CHARS = 600  # a folded node list in a message, at most
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def when(at: datetime) -> str:
    """A moment for mrkdwn: Slack shows it in the reader's zone; the fallback says UTC."""
    utc = at.astimezone(UTC)
    token = "{date_short_pretty} {time_secs}"
    return f"<!date^{int(utc.timestamp())}^{token}|{plain_time(utc)}>"


def plain_time(at: datetime) -> str:
    """A moment in plain text (a notification, a header): UTC, said so."""
    return f"{at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def fold(nodes: Iterable[str], limit: int = NODES_MAX_CHARS) -> str:
    """Node names folded into a hostlist (`gpu-[001-143]`); past `limit` characters, the first
    ones that fit and how many more."""
    names = sorted(set(nodes))
    if not names:
        return "-"
    folded = _collect(names)
    if len(folded) <= limit:
        return folded
    low, high = 0, len(names)  # the most names whose fold fits lies in [low, high)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if len(_collect(names[:mid])) <= limit else (low, mid)
    return f"{_collect(names[:low])}… and {len(names) - low} more ({len(names)} in all)"


def _collect(names: list[str]) -> str:
    if not names:
        return ""
    try:
        return str(hostlist.collect_hostlist(names))
    except hostlist.BadHostlist:  # names hostlist cannot fold: listed as they are
        return ",".join(names)


def spoken(value: Any) -> str:
    """Any detail value in words."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, datetime):
        return when(value)
    if isinstance(value, Mapping):
        return "; ".join(f"{label(k)} {spoken(v)}" for k, v in value.items()) or "nothing"
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        if len(items) > 1 and all(isinstance(i, str) and _NAME.match(i) for i in items):
            return fold(items)
        return ", ".join(spoken(i) for i in items) or "none"
    return str(value)


def label(key: Any) -> str:
    return str(key).replace("_", " ")


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")
