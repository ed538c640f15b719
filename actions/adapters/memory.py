"""An adapter that changes nothing real: it records requests, for the demo and tests.

Tests script it: `fail("drain", TemporaryError(...))` makes the next drain calls raise, in order;
`run_stdout` is what `run_on_nodes` answers, or with `execute_runs` it runs the command here once
per node (with `CENTRALITY_NODE` set), as a scheduler would on each node. By default it answers
what the benchmark runner prints for a healthy node (a `pass` report per node, with figures
typical of the node's GPU model: an H100 unless `gpu_models` names another), or a `fail` for
nodes in `unhealthy`: so a demo on it goes drain → benchmark → verdict. A node in `performs_as`
reaches another model's figures and its runner still passes it (no thresholds): the streams'
datasheet check is what fails it.
A node in `healed_by` is healthy once the rung named there ran on it (a GPU reset or a reboot),
so a demo's remediation ladder ends in a release; GPU resets and inventories are answered as
`actions.remediation` prints them. The signals asked of a job (`signal`) are kept per job, and
written to `signals_file` where one is set, for a simulator to answer.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from actions.adapters.base import RunResult, adapter
from actions.adapters.settings import MemorySettings
from actions.benchmark.runner import KIND
from actions.remediation import gpu_inventory, gpu_reset
from schemas.gpu_specs import TYPICAL_MATMUL, TYPICAL_MEMORY, spec_of

GPUS = 8
MODEL = "NVIDIA H100 80GB HBM3"  # a simulated node's GPUs unless `gpu_models` names others


def simulated_report(
    node: str, problem: str | None = None, model: str = MODEL, performs_as: str | None = None
) -> dict[str, Any]:
    """A report as `actions.benchmark.runner` prints it, for a node nothing really runs on: its
    GPUs named `model`, at figures typical of `performs_as` (by default, of `model`)."""
    spec = spec_of(performs_as or model)
    if spec is None:
        raise ValueError(f"no datasheet entry for {performs_as or model}: nothing to simulate")
    tflops = 180.0 if problem else round(spec.matmul_tflops * TYPICAL_MATMUL, 1)
    memory = round(spec.memory_gbps * TYPICAL_MEMORY)
    gpu = {"matmul_tflops": tflops, "dtype": "bf16", "model": model}
    return {
        "kind": KIND,
        "node": node,
        "gpus": [{"gpu": g, **gpu, "memory_bandwidth_gbps": float(memory)} for g in range(GPUS)],
        "nccl_busbw_gbps": 185.0,
        "verdict": "fail" if problem else "pass",
        "reasons": [problem] if problem else [],
        "thresholds": {},
        "duration_s": 0.0,
    }


@adapter("memory")
class InMemoryAdapter:
    name = "memory"

    def __init__(self) -> None:
        self.requeued: list[tuple[str, str | None]] = []
        self.excluded: dict[str, list[str]] = {}  # job → the nodes its requeues avoid
        self.rebooted: list[str] = []
        self.reset: list[tuple[str, tuple[int, ...]]] = []
        self.cancelled: dict[str, str] = {}
        self.released: list[str] = []
        self.signalled: dict[str, list[str]] = {}  # job → the signals sent to it, in order
        self.drained: dict[str, str] = {}
        self.taints: dict[str, set[str]] = {}
        self.runs: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        self.failures: dict[str, list[Exception]] = {}
        self.calls: list[str] = []
        self.run_stdout: str | None = None  # None: a simulated report per node
        settings = MemorySettings()
        self.unhealthy = dict(settings.unhealthy)  # node → why its benchmark fails
        self.healed_by = dict(settings.healed_by)  # node → the rung that makes it healthy
        self.gpu_models = dict(settings.gpu_models)
        self.performs_as = dict(settings.performs_as)
        self.unhealthy_file = settings.unhealthy_file
        self.signals_file = settings.signals_file
        self.execute_runs = False

    def fail(self, method: str, *errors: Exception) -> None:
        self.failures.setdefault(method, []).extend(errors)

    def _call(self, method: str) -> None:
        self.calls.append(method)
        pending = self.failures.get(method)
        if pending:
            raise pending.pop(0)

    def requeue(
        self, job_id: str, *, checkpoint_uri: str | None, exclude: Sequence[str] = ()
    ) -> dict[str, Any]:
        self._call("requeue")
        self.requeued.append((job_id, checkpoint_uri))
        excluded = self.excluded.setdefault(job_id, [])
        excluded += [n for n in exclude if n not in excluded]
        return {
            "scheduler": self.name,
            "job_id": job_id,
            "checkpoint_uri": checkpoint_uri,
            "requeued": len(self.requeued),
            "excluded": list(excluded),
        }

    def reboot(self, nodes: Sequence[str], *, reason: str) -> dict[str, Any]:
        self._call("reboot")
        self.rebooted += nodes
        self._heal(nodes, "reboot")
        return {"scheduler": self.name, "rebooting": list(nodes), "reason": reason}

    def _heal(self, nodes: Sequence[str], rung: str) -> None:
        """A simulated node whose fault `rung` clears is healthy from now on."""
        for node in nodes:
            if self.healed_by.get(node) == rung:
                self.unhealthy.pop(node, None)

    def cancel(self, job_id: str, *, reason: str) -> dict[str, Any]:
        self._call("cancel")
        self.cancelled[job_id] = reason
        return {"scheduler": self.name, "job_id": job_id, "action": "cancelled"}

    def release(self, job_id: str) -> dict[str, Any]:
        self._call("release")
        self.released.append(job_id)
        return {"scheduler": self.name, "job_id": job_id, "action": "released"}

    def signal(self, job_id: str, *, signal: str) -> dict[str, Any]:
        self._call("signal")
        self.signalled.setdefault(job_id, []).append(signal)
        if self.signals_file is not None:
            _write_json(self.signals_file, self.signalled)
        return {"scheduler": self.name, "job_id": job_id, "signal": signal, "action": "signalled"}

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
        if self.run_stdout is not None:
            return RunResult(exit_code=0, stdout=self.run_stdout)
        if not self.execute_runs:
            reports = [self._simulated(command, n) for n in nodes]
            return RunResult(exit_code=0, stdout="".join(json.dumps(r) + "\n" for r in reports))
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

    def _simulated(self, command: Sequence[str], node: str) -> dict[str, Any]:
        """What the node tool in `command` would print on a simulated node: a GPU reset, the
        GPUs' inventory, or (anything else) the benchmark."""
        if gpu_reset.__name__ in command:
            gpus = [int(g) for g in _arg(command, "--gpus").split(",") if g] or list(range(GPUS))
            self.reset.append((node, tuple(gpus)))
            self._heal([node], "reset")
            done: list[dict[str, Any]] = [
                {"gpu": g, "reset": True, "pids": [], "error": None} for g in gpus
            ]
            return {"kind": gpu_reset.KIND, "node": node, "gpus": done, "error": None}
        if gpu_inventory.__name__ in command:
            found = simulated_gpus(node, self.gpu_models.get(node, MODEL))
            return {"kind": gpu_inventory.KIND, "node": node, "gpus": found}
        return simulated_report(
            node,
            {**self.unhealthy, **self._unhealthy_now()}.get(node),
            self.gpu_models.get(node, MODEL),
            self.performs_as.get(node),
        )

    def _unhealthy_now(self) -> dict[str, str]:
        return {} if self.unhealthy_file is None else read_unhealthy(self.unhealthy_file)


def read_unhealthy(path: Path) -> dict[str, str]:
    """The nodes `path` says fail their benchmark, and why (none where it does not exist)."""
    if not path.exists():
        return {}
    found: dict[str, str] = json.loads(path.read_text())
    return found


def write_unhealthy(path: Path, unhealthy: Mapping[str, str], fleet: Iterable[str]) -> None:
    """Says in `path` that the nodes of `fleet` in `unhealthy` fail their benchmark and the
    rest of `fleet` pass it (other nodes are left as the file says), all at once: a benchmark
    reading it meanwhile sees the old or the new, never half."""
    ours = set(fleet)
    kept = {n: why for n, why in read_unhealthy(path).items() if n not in ours}
    _write_json(path, kept | dict(unhealthy))


def _write_json(path: Path, value: Any) -> None:
    """`value` in `path` all at once: a reader sees the old file or the new, never half."""
    scratch = path.with_name(f".{path.name}.tmp")
    scratch.write_text(json.dumps(value))
    scratch.replace(path)


def _arg(command: Sequence[str], name: str) -> str:
    args = list(command)
    return args[args.index(name) + 1] if name in args[:-1] else ""


def simulated_gpus(node: str, model: str = MODEL) -> list[dict[str, Any]]:
    """A simulated node's GPUs as `gpu_inventory` reports them (serials made up per node)."""
    digits = sum(ord(c) for c in node) % 10_000
    return [
        {
            "gpu": g,
            "uuid": f"GPU-{digits:04d}{g:04d}-0000-0000-0000-000000000000",
            "serial": f"165372{digits:04d}{g:03d}",
            "pci_bus_id": f"00000000:{0x18 + g * 0x10:02X}:00.0",
            "name": model,
        }
        for g in range(GPUS)
    ]
