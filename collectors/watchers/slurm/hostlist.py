"""Slurm hostlists (`node[1-3,7],gpu-[01-02]`) to node names, without a `scontrol` call each."""

from __future__ import annotations

import re

_GROUP = re.compile(r"([^,\[]*)(?:\[([^\]]+)\])?([^,]*)")


def expand(hostlist: str) -> tuple[str, ...]:
    names: list[str] = []
    pos = 0
    while pos < len(hostlist):
        m = _GROUP.match(hostlist, pos)
        if m is None or m.end() == pos:
            break
        prefix, ranges, suffix = m.groups()
        if ranges is None:
            if prefix:
                names.append(prefix + suffix)
        else:
            for part in ranges.split(","):
                lo, _, hi = part.partition("-")
                width = len(lo)
                for i in range(int(lo), int(hi or lo) + 1):
                    names.append(f"{prefix}{i:0{width}d}{suffix}")
        pos = m.end() + 1  # skip the comma
    return tuple(names)
