"""Node names folded into a hostlist (`gpu-[001-143],login1`), in Slurm's syntax.

python-hostlist's `collect_hostlist` folds any list, ranges in the middle of names included, at
~14 µs a name (27 ms for 2,000 names here): too slow for the streams worker, which folds an
incident's members each time one joins. Fleets name nodes with a number at the end, and that
alone is folded here, in one pass (~1 µs a name, 2.2 ms for 2,000); python-hostlist expands
what this writes back to the same names (tests/unit/schemas/test_hostnames.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_DIGITS = "0123456789"
_SPECIAL = re.compile(r"[\[\],]")


def collect(names: Iterable[str]) -> str:
    """`names` as one hostlist, each name once; names with a hostlist's own characters in them
    (`[`, `]`, `,`) are left out, as no hostlist can say them."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for name in set(names):
        if _SPECIAL.search(name):
            continue
        prefix = name.rstrip(_DIGITS)
        digits = name[len(prefix) :]
        if not digits:
            plain.append(name)
            continue
        # One width a group: `node7` and `node07` are different names.
        groups.setdefault((prefix, len(digits)), []).append(int(digits))
    parts = [*sorted(plain)]
    for (prefix, width), numbers in sorted(groups.items()):
        parts.append(_ranges(prefix, width, sorted(numbers)))
    return ",".join(parts)


def _ranges(prefix: str, width: int, numbers: list[int]) -> str:
    if len(numbers) == 1:
        return f"{prefix}{numbers[0]:0{width}d}"
    spans: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        spans.append(
            f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}"
        )
        if n is not None:
            start = prev = n
    return f"{prefix}[{','.join(spans)}]"
