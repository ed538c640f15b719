"""Selecting from the fleet as the streams app sees it (`schemas.runtime.fleet`): what `centrality
nodes`, `jobs`, `silence` and the Python client take as NAMES and filters.

States are the statuses' own words, one name each (`schemas.events.status`): an unknown one is
an error naming the valid ones, never an empty selection.
"""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import hostlist

from schemas.events import JobStatusChanged, NodeStatusChanged
from schemas.events.jobs import JobState
from schemas.events.status import NODE_STATES, OUT_OF_SERVICE
from schemas.runtime.fleet import Fleet as Fleet
from schemas.runtime.fleet import FleetReader as FleetReader
from schemas.runtime.fleet import read_fleet as read_fleet

Kind = Literal["node", "job"]
JOB_STATES: tuple[str, ...] = tuple(s.value for s in JobState)
STATES: dict[Kind, tuple[str, ...]] = {"node": NODE_STATES, "job": JOB_STATES}
Status = NodeStatusChanged | JobStatusChanged


def did_you_mean(value: str, known: Iterable[str]) -> str:
    """` (did you mean x?)` when something known is close to `value`, else nothing."""
    near = difflib.get_close_matches(value, list(known), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(near)}?)" if near else ""


def checked_states(kind: Kind, states: str | Iterable[str]) -> frozenset[str]:
    """The states named, spelt as the statuses spell them (case aside). Raises ValueError for
    one that no status ever has, naming the valid ones."""
    known = STATES[kind]
    spelt = {s.lower(): s for s in known}
    named = (states,) if isinstance(states, str) else tuple(states)
    out: set[str] = set()
    for state in named:
        found = spelt.get(state.strip().lower())
        if found is None:
            raise ValueError(
                f"no {kind} state is called {state!r}{did_you_mean(state.lower(), spelt)}; "
                f"the {kind} states: {', '.join(known)}"
            )
        out.add(found)
    return frozenset(out)


def out_of_service_states() -> frozenset[str]:
    """What `--out-of-service` selects: every state in which a node takes no work."""
    return frozenset(OUT_OF_SERVICE)


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


def named(subject: str, names: set[str] | str | None) -> bool:
    if isinstance(names, str):
        return fnmatch.fnmatchcase(subject, names)
    return names is None or subject in names


def natural(subject: str) -> list[Any]:
    """Sorts names and job ids as people count: gpu-2 before gpu-10, slurm/a/9 before /10."""
    key: list[Any] = hostlist.numeric_sort_key(subject)
    return key


def selected(
    statuses: Iterable[NodeStatusChanged] | Iterable[JobStatusChanged],
    *,
    cluster: str | None = None,
    states: Iterable[str] = (),
    names: set[str] | str | None = None,
    by: str | None = None,
    why: str | None = None,
) -> list[Status]:
    """The statuses that match every filter given, by cluster and name in natural order.
    `states` as `checked_states` gives them; `by`: a glob over who took the node out;
    `why`: words found (case aside) in its why or its problem."""
    wanted = frozenset(states)
    words = why.lower() if why else None
    out: list[Status] = []
    for status in statuses:
        p: Any = status.payload
        if cluster is not None and status.cluster != cluster:
            continue
        if wanted and (p.state is None or str(p.state) not in wanted):
            continue
        if not named(status.subject, names):
            continue
        if by is not None and not fnmatch.fnmatchcase(getattr(p, "by", None) or "", by):
            continue
        if words is not None and words not in _said_why(p):
            continue
        out.append(status)
    return sorted(out, key=lambda s: (s.cluster, natural(s.subject)))


def _said_why(p: Any) -> str:
    return f"{p.why or ''}\n{getattr(p, 'problem', None) or ''}".lower()


def unmatched(pattern: str, names: set[str] | str | None, known: Sequence[str]) -> list[str]:
    """Of what `pattern` names, what no known subject is (a glob: itself, when it matches
    none)."""
    if isinstance(names, str):
        return [] if any(fnmatch.fnmatchcase(k, names) for k in known) else [pattern]
    have = set(known)
    return sorted((n for n in names or () if n not in have), key=natural)
