"""Size limits of what the worker writes, so a result or ledger entry always fits a message.

Policy: texts (errors, reasons) keep their first `MAX_TEXT_CHARS` characters and say how long
they were; a `detail` mapping whose JSON is over `MAX_DETAIL_BYTES` is replaced by a summary
(`truncated`, its size, its keys, the start of its JSON). Subject, cluster and nodes are kept
whole: they come from the trigger, which the worker refuses above
`CENTRALITY_ACTIONS_MAX_TRIGGER_BYTES` (dead letter `too_large`), and with that limit every
result and entry stays below Kafka's default message size (1 MiB). A dead letter keeps the
first `MAX_RAW_BYTES` of its message and `MAX_KEY_BYTES` of its key, and says so in `detail`.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

MAX_TEXT_CHARS = 2000
# A dead letter carries its message's first bytes only (base64 makes them a third larger).
MAX_RAW_BYTES = 256 * 1024
MAX_KEY_BYTES = 1024
MAX_DETAIL_BYTES = 16 * 1024
_HEAD_CHARS = 2000
_MAX_KEYS = 50


def bounded_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (truncated, {len(text)} chars)"


def bounded_detail(detail: dict[str, Any]) -> dict[str, Any]:
    encoded = to_json(detail, fallback=str)
    if len(encoded) <= MAX_DETAIL_BYTES:
        return detail
    return {
        "truncated": True,
        "bytes": len(encoded),
        "keys": [bounded_text(str(k), 100) for k in list(detail)[:_MAX_KEYS]],
        "head": encoded[:_HEAD_CHARS].decode(errors="replace"),
    }
