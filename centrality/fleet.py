"""Selecting from the fleet as the streams app sees it (`schemas.fleet`): what `centrality
nodes`, `jobs` and `silence` take as NAMES."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable

import hostlist

from schemas.events import JobStatusChanged, NodeStatusChanged
from schemas.fleet import Fleet as Fleet
from schemas.fleet import FleetReader as FleetReader
from schemas.fleet import read_fleet as read_fleet


def matcher(pattern: str | None) -> set[str] | str | None:
    """What a NAMES argument selects: a hostlist (`gpu-[01-04]`, expanded as Slurm does) or a
    glob (`gpu-*`). Raises ValueError for a hostlist that does not parse."""
    if not pattern:
        return None
    if any(c in pattern for c in "*?"):
        return pattern
    try:
        return set(hostlist.expand_hostlist(pattern))
    except hostlist.BadHostlist as exc:
        raise ValueError(f"{pattern!r} is neither a hostlist nor a glob: {exc}") from None


def selected(
    statuses: Iterable[NodeStatusChanged] | Iterable[JobStatusChanged],
    *,
    cluster: str | None = None,
    states: Iterable[str] = (),
    names: set[str] | str | None = None,
) -> list[NodeStatusChanged | JobStatusChanged]:
    wanted = {s.lower() for s in states}
    out: list[NodeStatusChanged | JobStatusChanged] = []
    for status in statuses:
        if cluster is not None and status.cluster != cluster:
            continue
        state = status.payload.state
        if wanted and (state is None or str(state).lower() not in wanted):
            continue
        if isinstance(names, str) and not fnmatch.fnmatchcase(status.subject, names):
            continue
        if isinstance(names, set) and status.subject not in names:
            continue
        out.append(status)
    return sorted(out, key=lambda s: (s.cluster, s.subject))
