"""Node groups: a rule's configuration scoped by selectors over a node's facts and its cluster.

A rule's config may carry `scopes`, each a `match` and overrides of the rule's own fields:

    {"threshold": 3, "scopes": [{"match": {"gpu_model": "NVIDIA A100*"}, "threshold": 5}]}

A scope matches a subject when every key of its `match` does (globs, `fnmatch`, case-sensitive):
`cluster`, `node` (a glob or a hostlist, as the ladders' `nodes`), `gpu_model`, `partition` and
`feature` (any of the node's), `label` (each `key: glob` on the node's labels). Facts come from
the agent (NVML) and the scheduler's watcher (`Node.facts`); a subject without facts (a job)
matches only scopes on `cluster`. The most specific matching scope decides (specificity: the
number of keys, each label one), else the rule's own config. Two scopes of the same specificity
that some node can match both are refused at load, since which one decides would be arbitrary.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import hostlist
from pydantic import BaseModel, ConfigDict, Field, field_validator


def is_glob(selector: str) -> bool:
    """A node selector with `*` or `?` is a glob; without, a hostlist (`gpu-[01-04]`)."""
    return any(c in "*?" for c in selector)


def _literal(pattern: str) -> bool:
    return not any(c in "*?[" for c in pattern)


def node_selector(value: str) -> str:
    """A node selector as the ladders and scopes take it: a glob, or a valid hostlist."""
    if not is_glob(value):
        try:
            hostlist.expand_hostlist(value)
        except hostlist.BadHostlist as exc:
            raise ValueError(f"{value!r} is neither a glob nor a hostlist: {exc}") from None
    return value


def node_selected(node: str, selector: str) -> bool:
    if is_glob(selector):
        return fnmatch.fnmatchcase(node, selector)
    return node in hostlist.expand_hostlist(selector)


class Match(BaseModel):
    """What a scope selects; every key given must match."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cluster: str | None = Field(default=None, description="The subject's cluster (a glob).")
    node: str | None = Field(default=None, description="The node's name: a glob or a hostlist.")
    gpu_model: str | None = Field(
        default=None, description="NVML's model name, e.g. `NVIDIA A100*`."
    )
    partition: str | None = Field(default=None, description="Any of the node's Slurm partitions.")
    feature: str | None = Field(default=None, description="Any of its active Slurm features.")
    label: dict[str, str] = Field(
        default_factory=dict, description="Kubernetes node labels: each key's value (a glob)."
    )

    @field_validator("node")
    @classmethod
    def _node(cls, value: str | None) -> str | None:
        return value if value is None else node_selector(value)

    @property
    def on_facts(self) -> bool:
        """Whether it selects by what a node is (not only by cluster or name)."""
        return any(getattr(self, k) is not None for k in _FACTS) or bool(self.label)

    @property
    def specificity(self) -> int:
        return sum(1 for k in _SINGLE + _ANY if getattr(self, k) is not None) + len(self.label)

    def said(self) -> str:
        """How a decision's reason names it: `gpu_model=NVIDIA A100*, label.zone=a`."""
        keys = [f"{k}={getattr(self, k)}" for k in _SINGLE + _ANY if getattr(self, k) is not None]
        return ", ".join([*keys, *(f"label.{k}={v}" for k, v in sorted(self.label.items()))])

    def selects(self, state: Any) -> bool:
        if self.cluster is not None and not fnmatch.fnmatchcase(state.cluster, self.cluster):
            return False
        if self.node is not None:
            node = getattr(state, "node_id", None)
            if node is None or not node_selected(node, self.node):
                return False
        facts = getattr(state, "facts", None)
        if facts is None:
            return not self.on_facts
        if self.gpu_model is not None and not _glob(facts.gpu_model, self.gpu_model):
            return False
        if self.partition is not None and not _any(facts.partitions, self.partition):
            return False
        if self.feature is not None and not _any(facts.features, self.feature):
            return False
        return all(_glob(facts.labels.get(k), v) for k, v in self.label.items())


_SINGLE = ("cluster", "node", "gpu_model")  # one value per node: two patterns may exclude
_ANY = ("partition", "feature")  # a node has several: any two patterns can both hold
_FACTS = ("gpu_model", *_ANY)


def _glob(value: str | None, pattern: str) -> bool:
    return value is not None and fnmatch.fnmatchcase(value, pattern)


def _any(values: Iterable[str], pattern: str) -> bool:
    return any(fnmatch.fnmatchcase(v, pattern) for v in values)


@dataclass(frozen=True)
class Scope:
    """One scope of a rule: what it selects, and the rule's config there."""

    match: Match
    config: Any  # the rule's RuleConfig with the scope's overrides
    overrides: Mapping[str, Any]

    @property
    def said(self) -> str:
        return f"scope {self.match.said()}"


def chosen(scopes: Iterable[Scope], state: Any) -> Scope | None:
    """The most specific scope that selects `state` (the first given of equals); None: none."""
    best: Scope | None = None
    for scope in scopes:
        if (best is None or scope.match.specificity > best.match.specificity) and (
            scope.match.selects(state)
        ):
            best = scope
    return best


def clash(a: Match, b: Match) -> bool:
    """Whether some node is provably selected by both at the same specificity: on every key of
    one value per node that both name, one pattern admits the other (equal, or a literal that
    the other glob matches; hostlists by the nodes they name). Two different globs prove
    nothing, so they pass."""
    if a.specificity != b.specificity:
        return False
    pairs = [(getattr(a, k), getattr(b, k)) for k in ("cluster", "gpu_model")]
    pairs += [(a.label[k], b.label[k]) for k in a.label.keys() & b.label.keys()]
    if not all(x is None or y is None or _meet(x, y) for x, y in pairs):
        return False
    return a.node is None or b.node is None or _nodes_meet(a.node, b.node)


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
