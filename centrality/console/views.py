"""What the console's pages show, made from the statuses `centrality nodes`/`jobs` read: rows
(projections of a status, never a state of their own), counts and selections.

Selections go through `centrality.fleet.selected` (cluster, states, a hostlist or a glob), as
the CLI's do; the console adds the choices a page offers beside them (node group, rule, reason,
search). Rows are made once per status record and kept until the subject's next record.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from centrality.fleet import matcher, selected
from schemas.events import JobStatusChanged, NodeStatusChanged

NODE_COLUMNS = (
    "node",
    "cluster",
    "state",
    "since",
    "why",
    "by",
    "pending",
    "gpus",
    "gpu_model",
    "partitions",
    "jobs_running",
    "incident",
)
JOB_COLUMNS = (
    "job",
    "cluster",
    "state",
    "since",
    "pending",
    "attempt",
    "restarts_used",
    "restarts_left",
    "checkpoint_step",
    "checkpoint_at",
    "nodes_count",
    "nodes",
    "last_signal",
    "why",
)


def _iso(value: Any) -> str | None:
    return None if value is None else str(value.isoformat())


def node_row(s: NodeStatusChanged) -> tuple[Any, ...]:
    p = s.payload
    return (
        s.subject,
        s.cluster,
        p.state,
        _iso(p.since),
        p.problem or p.why,
        p.by,
        p.pending,
        p.gpus,
        p.gpu_model,
        list(p.partitions),
        p.jobs_running,
        p.incident,
    )


def job_row(s: JobStatusChanged) -> tuple[Any, ...]:
    p = s.payload
    return (
        s.subject,
        s.cluster,
        p.state,
        _iso(p.since),
        p.pending,
        p.attempt,
        p.restarts_used,
        p.restarts_left,
        p.checkpoint_step,
        _iso(p.checkpoint_at),
        p.nodes_count,
        list(p.nodes),
        p.last_signal,
        p.why,
    )


@dataclass
class Rows:
    """Each subject's row, and its words in lower case for a search, made again only when its
    status record is a new one."""

    make: Callable[[Any], tuple[Any, ...]]
    _kept: dict[str, tuple[object, tuple[Any, ...], str]] = field(default_factory=dict)

    def of(self, status: Any) -> tuple[tuple[Any, ...], str]:
        kept = self._kept.get(status.subject)
        if kept is None or kept[0] is not status:
            row = self.make(status)
            kept = (status, row, "\x1f".join(_words(v) for v in row).lower())
            self._kept[status.subject] = kept
        return kept[1], kept[2]


@dataclass(frozen=True)
class Selection:
    """What a page asks for; every choice given must hold."""

    cluster: str | None = None
    states: tuple[str, ...] = ()
    names: str | None = None  # a hostlist or a glob, as `centrality nodes NAMES`
    group: str | None = None  # `gpu_model=<model>` or `partition=<name>`
    rule: str | None = None  # the rule or `operator/<name>` that decided
    reason: str | None = None  # words of the why or problem
    search: str | None = None  # words anywhere in the row
    sort: str | None = None  # a column; `-column`: descending

    @classmethod
    def of(cls, query: Mapping[str, str], states: Sequence[str]) -> Selection:
        def given(name: str) -> str | None:
            value = query.get(name, "").strip()
            return value or None

        return cls(
            cluster=given("cluster"),
            states=tuple(s for s in states if s),
            names=given("names"),
            group=given("group"),
            rule=given("rule"),
            reason=given("reason"),
            search=given("q"),
            sort=given("sort"),
        )


def _words(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(map(str, value))
    return "" if value is None else str(value)


def _holds(want: Selection, columns: Sequence[str]) -> Callable[[tuple[Any, ...], str], bool]:
    """The page's own choices (beyond `selected`'s) as one test of a row and its words."""
    tests: list[Callable[[tuple[Any, ...], str], bool]] = []
    if want.group:
        key, _, value = want.group.partition("=")
        at = columns.index("partitions" if key == "partition" else "gpu_model")
        if key == "partition":
            tests.append(lambda row, _: value in row[at])
        else:
            tests.append(lambda row, _: row[at] == value)
    if want.rule and "by" in columns:
        rule, at_rule = want.rule, columns.index("by")
        tests.append(lambda row, _: row[at_rule] == rule)
    if want.reason:
        reason, at_why = want.reason.lower(), columns.index("why")
        tests.append(lambda row, _: reason in _words(row[at_why]).lower())
    if want.search:
        search = want.search.lower()
        tests.append(lambda _, words: search in words)
    return lambda row, words: all(test(row, words) for test in tests)


def choose(
    statuses: Iterable[Any], rows: Rows, columns: Sequence[str], want: Selection
) -> list[tuple[Any, ...]]:
    """The rows `want` selects, sorted. ValueError for a NAMES that is neither a hostlist nor a
    glob, or a group that is neither `gpu_model=` nor `partition=`."""
    if want.group and want.group.partition("=")[0] not in ("gpu_model", "partition"):
        raise ValueError(f"{want.group!r} is not a node group (gpu_model=… or partition=…)")
    found = selected(statuses, cluster=want.cluster, states=want.states, names=matcher(want.names))
    holds = _holds(want, columns)
    out = []
    for status in found:
        row, words = rows.of(status)
        if holds(row, words):
            out.append(row)
    return _sorted(out, columns, want.sort)


def _sorted(rows: list[tuple[Any, ...]], columns: Sequence[str], sort: str | None) -> list[Any]:
    if not sort or sort.lstrip("-") not in columns:
        return rows  # `selected` gives them by cluster and name
    at = columns.index(sort.lstrip("-"))

    def key(row: tuple[Any, ...]) -> tuple[bool, Any]:
        value = row[at]
        return (value is None, _words(value) if isinstance(value, list) else value)

    present = [r for r in rows if r[at] is not None]
    absent = [r for r in rows if r[at] is None]
    present.sort(key=key, reverse=sort.startswith("-"))
    return present + absent  # empty values last, whichever way


def counts(statuses: Iterable[Any]) -> dict[str, Any]:
    """How many subjects per state, and per cluster and state."""
    by_state: Counter[str] = Counter()
    by_cluster: dict[str, Counter[str]] = {}
    for s in statuses:
        state = str(s.payload.state)
        by_state[state] += 1
        by_cluster.setdefault(s.cluster, Counter())[state] += 1
    return {
        "states": dict(sorted(by_state.items())),
        "clusters": {c: dict(sorted(n.items())) for c, n in sorted(by_cluster.items())},
    }


def node_facets(statuses: Iterable[NodeStatusChanged]) -> dict[str, list[str]]:
    """What the fleet page offers to choose from: groups (GPU models, partitions) and rules."""
    models: set[str] = set()
    partitions: set[str] = set()
    rules: set[str] = set()
    for s in statuses:
        p = s.payload
        if p.gpu_model:
            models.add(p.gpu_model)
        partitions.update(p.partitions)
        if p.by:
            rules.add(p.by)
    groups = [f"gpu_model={m}" for m in sorted(models)]
    groups += [f"partition={p}" for p in sorted(partitions)]
    return {"groups": groups, "rules": sorted(rules)}
