"""How much a table value may hold: the trimming policy that keeps every changelog record small.

A table value is one Kafka record on its changelog. Kafka refuses records over its message limit
(Faust's producer: 1,000,000 bytes), and a refused changelog record used to be retried for ever,
wedging the worker. So every list or map in a state has a bound, by count and by encoded size
(ids may hold characters that JSON escapes to 6 bytes each), and drops the oldest or least
useful entries first:

| state | what | kept |
|---|---|---|
| TrainingJob | `nodes` (the current allocation) | first 1024 nodes, ≤ 128 KiB |
| TrainingJob | `attempts` | newest 16; each keeps its first 64 nodes, ≤ 16 KiB |
| TrainingJob | `restarts` | newest 32 (`max_restarts` beyond that is meaningless) |
| Node | `health` | 32 checks, the most recently reported; names ≤ 64, messages ≤ 256 chars |
| Node | `gpus`, `xid_counts` | the first 64 GPU indices / XID codes seen |
| Node | `jobs` (attempts running here) | newest 64 |
| Node, NodeSet | `failures` | newest 256 within the retention, ≤ 128 KiB (`windows.record`) |
| NodeSet | `nodes` | first 1024 nodes, ≤ 128 KiB |
| any | `rule_memo.signals` | per rule: newest `keep_signals` (≤ 256) within 7 days |

Ids longer than `ID_CHARS_MAX` are no subject the worker folds (it dead-letters such messages
as `limit`), so no list keeps them either. Whatever the policy misses, `STATE_BYTES_MAX` is
checked before a value is written: a message that would make a bigger value is dead-lettered
(`state-too-large`) and the state stays as it was.

Redelivered events older than what a trimmed list still holds are recognised by their number
(attempts, restarts), so trimming never makes a fold count an event twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import orjson

ID_CHARS_MAX = 512  # k8s/<namespace ≤ 63>/<name ≤ 253> and Slurm ids fit with room to spare
STATE_BYTES_MAX = 512 * 1024  # half the message limit: key, headers and framing fit beside it
TEXT_CHARS_MAX = 1024  # informational text kept in a state (health messages, reasons)

JOB_NODES_KEPT = 1024
NODE_SET_NODES_KEPT = 1024
NODES_BYTES_KEPT = 128 * 1024
ATTEMPTS_KEPT = 16
ATTEMPT_NODES_KEPT = 64
ATTEMPT_NODES_BYTES_KEPT = 16 * 1024
RESTARTS_KEPT = 32
HEALTH_CHECKS_KEPT = 32
CHECK_NAME_CHARS_MAX = 64
HEALTH_MESSAGE_CHARS_MAX = 256
GPUS_KEPT = 64
XIDS_COUNTED = 64
JOBS_PER_NODE_KEPT = 64  # jobs running on one node at once: a shared node runs a handful
FAILURES_KEPT = 256
FAILURES_BYTES_KEPT = 128 * 1024

T = TypeVar("T")


def json_size(value: object) -> int:
    return len(orjson.dumps(value))


def within(
    items: Sequence[T], count: int, size_bytes: int, size: Callable[[T], int] = json_size
) -> tuple[T, ...]:
    """The first items of `items` that fit both `count` and `size_bytes` (JSON-encoded)."""
    kept: list[T] = []
    used = 0
    for item in items[:count]:
        used += size(item) + 1  # the comma
        if used > size_bytes:
            break
        kept.append(item)
    return tuple(kept)


def newest(
    items: Sequence[T], count: int, size_bytes: int, size: Callable[[T], int]
) -> tuple[T, ...]:
    """The last items of `items` that fit both bounds, in their order."""
    return tuple(reversed(within(list(reversed(items)), count, size_bytes, size)))


def node_ids(nodes: Iterable[str], count: int, size_bytes: int) -> tuple[str, ...]:
    """Node ids a state keeps: ids no worker folds are dropped, then the first that fit."""
    return within([n for n in nodes if len(n) <= ID_CHARS_MAX], count, size_bytes)


def clip(text: str, chars: int = TEXT_CHARS_MAX) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"
