"""Node groups and job classes: what a scope selects (`Match`), over what a subject shows it.

One `Match` serves every subject: rule scopes (`streams.rules.scopes`), the remediation
ladders and the action worker's breaker caps per node group (`quarantine_groups`). A subject
shows the keys that apply to its kind (`Facts`); a key given in a match that its subject does
not show (a job's `gpu_model`, a node's `user`) does not match it.

Node keys: `node` (a glob or a hostlist), `gpu_model`, `feature`, `label`; job keys: `job_name`,
`user`, `min_nodes`; both: `cluster` and `partition` (any of a node's Slurm partitions; a job's
queue: its Slurm partition, Kubernetes namespace or Ray cluster). Globs are `fnmatch`'s,
case-sensitive.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import hostlist
from pydantic import BaseModel, ConfigDict, Field, field_validator

# The kinds of subject, named as the streams app's tables are.
NODES, JOBS, NODE_SETS = "nodes", "jobs", "node_sets"
ALL = frozenset({NODES, JOBS, NODE_SETS})


def is_glob(selector: str) -> bool:
    """A node selector with `*` or `?` is a glob; without, a hostlist (`gpu-[01-04]`)."""
    return any(c in "*?" for c in selector)


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


@dataclass(frozen=True)
class Facts:
    """What a subject shows a match: its kind (`nodes`, `jobs`, `node_sets`), its cluster, and
    the facts of its kind that are known (None, empty: not known, or not of its kind)."""

    kind: str
    cluster: str
    node: str | None = None
    gpu_model: str | None = None
    partitions: tuple[str, ...] = ()
    features: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    job_name: str | None = None
    user: str | None = None
    nodes: int | None = None


class Match(BaseModel):
    """What a scope selects; every key given must match."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cluster: str | None = Field(default=None, description="The subject's cluster (a glob).")
    node: str | None = Field(default=None, description="The node's name: a glob or a hostlist.")
    gpu_model: str | None = Field(
        default=None, description="NVML's model name, e.g. `NVIDIA A100*`."
    )
    partition: str | None = Field(
        default=None,
        description="Any of a node's Slurm partitions; a job's queue (Slurm partition, "
        "Kubernetes namespace, Ray cluster).",
    )
    feature: str | None = Field(default=None, description="Any of its active Slurm features.")
    label: dict[str, str] = Field(
        default_factory=dict, description="Kubernetes node labels: each key's value (a glob)."
    )
    job_name: str | None = Field(default=None, description="A job's name as submitted.")
    user: str | None = Field(default=None, description="The user who submitted a job.")
    min_nodes: int | None = Field(
        default=None,
        ge=1,
        description="A job of at least this many nodes (as it asked, else as it ran on).",
    )

    @field_validator("node")
    @classmethod
    def _node(cls, value: str | None) -> str | None:
        return value if value is None else node_selector(value)

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys it selects by, labels as `label`."""
        return tuple(k for k in _KEYS if getattr(self, k) not in (None, {}))

    @property
    def kinds(self) -> frozenset[str]:
        """The kinds of subject it can select: those showing every key it names."""
        kinds = ALL
        for key in self.keys:
            kinds &= _KINDS.get(key, ALL)
        return kinds

    @property
    def specificity(self) -> int:
        return len(self.keys) - bool(self.label) + len(self.label)

    def said(self) -> str:
        """How a decision's reason names it: `gpu_model=NVIDIA A100*, label.zone=a`."""
        keys = [f"{k}={getattr(self, k)}" for k in self.keys if k != "label"]
        return ", ".join([*keys, *(f"label.{k}={v}" for k, v in sorted(self.label.items()))])

    def selects(self, facts: Facts) -> bool:
        if facts.kind not in self.kinds:
            return False
        if self.cluster is not None and not fnmatch.fnmatchcase(facts.cluster, self.cluster):
            return False
        if self.node is not None and (
            facts.node is None or not node_selected(facts.node, self.node)
        ):
            return False
        singles = (
            (facts.gpu_model, self.gpu_model),
            (facts.job_name, self.job_name),
            (facts.user, self.user),
        )
        if not all(_glob(value, pattern) for value, pattern in singles if pattern is not None):
            return False
        if self.partition is not None and not _any(facts.partitions, self.partition):
            return False
        if self.feature is not None and not _any(facts.features, self.feature):
            return False
        if self.min_nodes is not None and (facts.nodes or 0) < self.min_nodes:
            return False
        return all(_glob(facts.labels.get(k), v) for k, v in self.label.items())


_KEYS = (
    "cluster",
    "node",
    "gpu_model",
    "partition",
    "feature",
    "label",
    "job_name",
    "user",
    "min_nodes",
)
_KINDS = {
    "node": frozenset({NODES}),
    "gpu_model": frozenset({NODES}),
    "partition": frozenset({NODES, JOBS}),
    "feature": frozenset({NODES}),
    "label": frozenset({NODES}),
    "job_name": frozenset({JOBS}),
    "user": frozenset({JOBS}),
    "min_nodes": frozenset({JOBS}),
}


def _glob(value: str | None, pattern: str) -> bool:
    return value is not None and fnmatch.fnmatchcase(value, pattern)


def _any(values: Iterable[str], pattern: str) -> bool:
    return any(fnmatch.fnmatchcase(v, pattern) for v in values)
