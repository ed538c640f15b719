"""An adapter that changes nothing real: it records requests, for the demo and tests.

Tests script it: `fail("drain", TemporaryError(...))` makes the next drain calls raise, in order;
`run_stdout` is what `run_on_nodes` answers, or with `execute_runs` it runs the command here once
per node (with `CENTRALITY_NODE` set), as a scheduler would on each node.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from actions.adapters.base import RunResult, adapter


@adapter("memory")
class InMemoryAdapter:
    name = "memory"

    def __init__(self) -> None:
        self.requeued: list[tuple[str, str | None]] = []
        self.cancelled: dict[str, str] = {}
        self.released: list[str] = []
        self.drained: dict[str, str] = {}
        self.taints: dict[str, set[str]] = {}
        self.runs: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        self.failures: dict[str, list[Exception]] = {}
        self.calls: list[str] = []
        self.run_stdout = ""
        self.execute_runs = False

    def fail(self, method: str, *errors: Exception) -> None:
        self.failures.setdefault(method, []).extend(errors)

    def _call(self, method: str) -> None:
        self.calls.append(method)
        pending = self.failures.get(method)
        if pending:
            raise pending.pop(0)

    def requeue(self, job_id: str, *, checkpoint_uri: str | None) -> dict[str, Any]:
        self._call("requeue")
        self.requeued.append((job_id, checkpoint_uri))
        return {
            "scheduler": self.name,
            "job_id": job_id,
            "checkpoint_uri": checkpoint_uri,
            "requeued": len(self.requeued),
        }

    def cancel(self, job_id: str, *, reason: str) -> dict[str, Any]:
        self._call("cancel")
        self.cancelled[job_id] = reason
        return {"scheduler": self.name, "job_id": job_id, "action": "cancelled"}

    def release(self, job_id: str) -> dict[str, Any]:
        self._call("release")
        self.released.append(job_id)
        return {"scheduler": self.name, "job_id": job_id, "action": "released"}

    def drain(self, nodes: Sequence[str], *, reason: str) -> dict[str, Any]:
        self._call("drain")
        self.drained.update(dict.fromkeys(nodes, reason))
        return {"scheduler": self.name, "drained": list(nodes), "reason": reason}

    def resume(self, nodes: Sequence[str]) -> dict[str, Any]:
        self._call("resume")
        for node in nodes:
            self.drained.pop(node, None)
        return {"scheduler": self.name, "resumed": list(nodes)}

    def taint(self, nodes: Sequence[str], *, key: str, reason: str) -> dict[str, Any]:
        self._call("taint")
        for node in nodes:
            self.taints.setdefault(node, set()).add(key)
        return {"scheduler": self.name, "tainted": list(nodes), "key": key}

    def untaint(self, nodes: Sequence[str], *, key: str) -> dict[str, Any]:
        self._call("untaint")
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
        self._call("run_on_nodes")
        self.runs.append((tuple(nodes), tuple(command)))
        if not self.execute_runs:
            return RunResult(exit_code=0, stdout=self.run_stdout)
        done = [
            subprocess.run(
                list(command),
                env={**os.environ, **env, "CENTRALITY_NODE": node},
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
            for node in nodes
        ]
        return RunResult(
            exit_code=max(p.returncode for p in done),
            stdout="".join(p.stdout for p in done),
            stderr="".join(p.stderr for p in done),
        )

    def job_logs(self, job_id: str, *, tail_lines: int = 200) -> str:
        return ""
