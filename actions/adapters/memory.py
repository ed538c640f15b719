"""An adapter that changes nothing real: it records requests, for the demo and tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from actions.adapters.base import RunResult, adapter


@adapter("memory")
class InMemoryAdapter:
    name = "memory"

    def __init__(self) -> None:
        self.requeued: list[tuple[str, str | None]] = []
        self.drained: dict[str, str] = {}
        self.taints: dict[str, set[str]] = {}
        self.runs: list[tuple[tuple[str, ...], tuple[str, ...]]] = []

    def requeue(self, job_id: str, *, checkpoint_uri: str | None) -> dict[str, Any]:
        self.requeued.append((job_id, checkpoint_uri))
        return {
            "scheduler": self.name,
            "job_id": job_id,
            "checkpoint_uri": checkpoint_uri,
            "requeued": len(self.requeued),
        }

    def drain(self, nodes: Sequence[str], *, reason: str) -> dict[str, Any]:
        self.drained.update(dict.fromkeys(nodes, reason))
        return {"scheduler": self.name, "drained": list(nodes), "reason": reason}

    def resume(self, nodes: Sequence[str]) -> dict[str, Any]:
        for node in nodes:
            self.drained.pop(node, None)
        return {"scheduler": self.name, "resumed": list(nodes)}

    def taint(self, nodes: Sequence[str], *, key: str, reason: str) -> dict[str, Any]:
        for node in nodes:
            self.taints.setdefault(node, set()).add(key)
        return {"scheduler": self.name, "tainted": list(nodes), "key": key}

    def untaint(self, nodes: Sequence[str], *, key: str) -> dict[str, Any]:
        for node in nodes:
            self.taints.get(node, set()).discard(key)
        return {"scheduler": self.name, "untainted": list(nodes), "key": key}

    def run_on_nodes(
        self,
        nodes: Sequence[str],
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        timeout_s: float,
    ) -> RunResult:
        self.runs.append((tuple(nodes), tuple(command)))
        return RunResult(exit_code=0, stdout="")

    def job_logs(self, job_id: str, *, tail_lines: int = 200) -> str:
        return ""
