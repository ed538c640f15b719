"""Node groups and job classes: a rule's configuration scoped by selectors over its subject.

A rule's config may carry `scopes`, each a `match` (`schemas.groups.Match`) and overrides of the
rule's own fields:

    {"threshold": 3, "scopes": [{"match": {"gpu_model": "NVIDIA A100*"}, "threshold": 5}]}
    {"max_restarts": 3, "scopes": [{"match": {"partition": "preemptible"}, "max_restarts": 10}]}

A scope matches a subject when every key of its `match` does, over what the subject shows
(`group_facts`): a node its NVML and scheduler facts (`Node.facts`), a job what it was submitted
with. The most specific matching scope decides (specificity: the number of keys, each label
one), else the rule's own config. Two scopes of the same specificity that some subject can match
both are refused at load, since which one decides would be arbitrary.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import hostlist

from schemas.groups import NODES, Facts, Match, is_glob, node_selected


@dataclass(frozen=True)
class Scope:
    """One scope of a rule: what it selects, and the rule's config there."""

    match: Match
    config: Any  # the rule's RuleConfig with the scope's overrides
    overrides: Mapping[str, Any]

    @property
    def said(self) -> str:
        return f"scope {self.match.said()}"


def chosen(scopes: Iterable[Scope], facts: Facts) -> Scope | None:
    """The most specific scope that selects `facts` (the first given of equals); None: none."""
    best: Scope | None = None
    for scope in scopes:
        if (best is None or scope.match.specificity > best.match.specificity) and (
            scope.match.selects(facts)
        ):
            best = scope
    return best


def clash(a: Match, b: Match, kinds: frozenset[str]) -> bool:
    """Whether some subject of `kinds` is provably selected by both at the same specificity: on
    every key of one value per subject that both name, one pattern admits the other (equal, or
    a literal that the other glob matches; hostlists by the nodes they name). Two different
    globs prove nothing, so they pass; a node has several partitions, a job one queue."""
    kinds = kinds & a.kinds & b.kinds
    if a.specificity != b.specificity or not kinds:
        return False
    single = ["cluster", "gpu_model", "job_name", "user"]
    single += ["partition"] if NODES not in kinds else []
    pairs = [(getattr(a, k), getattr(b, k)) for k in single]
    pairs += [(a.label[k], b.label[k]) for k in a.label.keys() & b.label.keys()]
    if not all(x is None or y is None or _meet(x, y) for x, y in pairs):
        return False
    return a.node is None or b.node is None or _nodes_meet(a.node, b.node)


def _literal(pattern: str) -> bool:
    return not any(c in "*?[" for c in pattern)


def _meet(x: str, y: str) -> bool:
    if x == y:
        return True
    if _literal(x):
        return fnmatch.fnmatchcase(x, y)
    if _literal(y):
        return fnmatch.fnmatchcase(y, x)
    return False  # two different globs: they may well be disjoint, so nothing is proven


def _nodes_meet(x: str, y: str) -> bool:
    if x == y:
        return True
    if is_glob(x) and is_glob(y):
        return False  # as for two globs above
    if is_glob(x):
        x, y = y, x
    hosts = hostlist.expand_hostlist(x)
    return any(node_selected(h, y) for h in hosts)
