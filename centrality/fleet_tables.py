"""The columns of `centrality nodes` and `jobs`: one set for the table, `--tsv` and the lines
`--watch` appends, each value said the same way in all of them (`why` is the status's why,
`by` who took the node out)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.table import Table
from rich.text import Text

from centrality.fleet import STATES, Kind, Status, natural
from centrality.output import age, cell, when

_STYLE = {
    "in_service": "green",
    "draining": "yellow",
    "suspect": "yellow",
    "held": "yellow",
    "quarantined": "red",
    "benchmarking": "magenta",
    "resetting": "magenta",
    "rebooting": "magenta",
    "releasing": "cyan",
    "escalated": "bold red",
    "down": "bold red",
    "unreachable": "bold red",
    "RUNNING": "green",
    "FAILED": "red",
    "PREEMPTED": "yellow",
}


@dataclass(frozen=True)
class Clock:
    """Times for a person at a terminal (`5m ago`), or in ISO 8601 (a pipe, `--tsv`)."""

    now: datetime
    plain: bool

    def time(self, at: datetime | None) -> str:
        return when(at) if self.plain else age(at, self.now)


Cell = Callable[[Any, Clock], str]


def _gpus(p: Any) -> str:
    return "-" if p.gpus is None else f"{p.gpus}" + (f" {p.gpu_model}" if p.gpu_model else "")


def _restarts(p: Any) -> str:
    left = "" if p.restarts_left is None else f", {p.restarts_left} left"
    return f"{p.restarts_used} used{left}"


def _pending(p: Any, clock: Clock) -> str:
    if not p.pending:
        return ""
    since = getattr(p, "pending_since", None)
    return str(p.pending) + (f" since {clock.time(since)}" if since else "")


def _checkpoint(p: Any, clock: Clock) -> str:
    if p.checkpoint_step is None:
        return "-"
    return f"step {p.checkpoint_step}, {clock.time(p.checkpoint_at)}"


NODE_COLUMNS: dict[str, Cell] = {
    "node": lambda s, c: s.subject,
    "cluster": lambda s, c: s.cluster,
    "state": lambda s, c: str(s.payload.state),
    "by": lambda s, c: s.payload.by or "",
    "since": lambda s, c: c.time(s.payload.since),
    "why": lambda s, c: s.payload.why or "",
    "problem": lambda s, c: s.payload.problem or "",
    "pending": lambda s, c: _pending(s.payload, c),
    "gpus": lambda s, c: _gpus(s.payload),
    "jobs": lambda s, c: str(s.payload.jobs_running),
}
JOB_COLUMNS: dict[str, Cell] = {
    "job": lambda s, c: s.subject,
    "cluster": lambda s, c: s.cluster,
    "state": lambda s, c: "-" if s.payload.state is None else str(s.payload.state),
    "since": lambda s, c: c.time(s.payload.since),
    "attempt": lambda s, c: str(s.payload.attempt),
    "restarts": lambda s, c: _restarts(s.payload),
    "pending": lambda s, c: _pending(s.payload, c),
    "why": lambda s, c: s.payload.why or "",
    "checkpoint": lambda s, c: _checkpoint(s.payload, c),
    "nodes": lambda s, c: str(s.payload.nodes_count),
    "signal": lambda s, c: s.payload.last_signal or "",
}
COLUMNS: dict[Kind, dict[str, Cell]] = {"node": NODE_COLUMNS, "job": JOB_COLUMNS}


def rows(kind: Kind, statuses: Sequence[Status], clock: Clock) -> list[list[str]]:
    cells = COLUMNS[kind].values()
    return [[value(s, clock) for value in cells] for s in statuses]


def counted(kind: Kind, statuses: Sequence[Status]) -> str:
    """`40 nodes: 35 in_service, 3 quarantined, 2 draining`, states in their order."""
    counts = Counter(str(s.payload.state) for s in statuses)
    order = {state: i for i, state in enumerate(STATES[kind])}
    each = sorted(counts.items(), key=lambda kv: order.get(kv[0], len(order)))
    head = f"{len(statuses)} {kind}s"
    return head + (": " + ", ".join(f"{n} {state}" for state, n in each) if each else "")


def sorter(kind: Kind, column: str | None) -> Callable[[list[Status]], list[Status]]:
    """Sorts by a column (`-since`: newest first); ValueError for a column the listing lacks.
    Names and ids sort as people count, times as times, states in their order; none last."""
    if column is None:
        return lambda found: found  # the selection's own order: by cluster, then name
    name = column.removeprefix("-")
    if name not in COLUMNS[kind]:
        raise ValueError(f"no column {name!r} to sort by; the columns: {', '.join(COLUMNS[kind])}")
    order = {state: i for i, state in enumerate(STATES[kind])}
    text, clock = COLUMNS[kind][name], Clock(datetime.min, plain=True)

    def value(s: Status) -> Any:
        p: Any = s.payload
        if name == "since":
            return p.since
        if name == "state":
            return None if p.state is None else order.get(str(p.state), len(order))
        said = text(s, clock)
        return None if said in ("", "-") else natural(said)

    def ordered(found: list[Status]) -> list[Status]:
        present = [s for s in found if value(s) is not None]
        present.sort(key=value, reverse=column.startswith("-"))
        return present + [s for s in found if value(s) is None]

    return ordered


def table(kind: Kind, statuses: Sequence[Status], now: datetime) -> Table:
    """The listing as a rich table, its states coloured, counts per state in its title."""
    found = Table(*COLUMNS[kind], title=counted(kind, statuses))
    state_at = list(COLUMNS[kind]).index("state")
    for row in rows(kind, statuses, Clock(now, plain=False)):
        cells = [cell(c) for c in row]
        cells[state_at] = Text(row[state_at], style=_STYLE.get(row[state_at], ""))
        found.add_row(*cells)
    return found
