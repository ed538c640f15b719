"""The recording adapter's benchmark fails the nodes its settings or its file name, read anew
at each run, so a simulator that breaks and mends nodes is told the truth; its GPUs are the
models its settings name, at their figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actions.adapters.memory import MODEL, InMemoryAdapter, read_unhealthy, write_unhealthy
from actions.remediation import gpu_inventory
from schemas.events.actions import BenchmarkCompletedPayload
from streams.state.judge import judge

A100 = "NVIDIA A100-SXM4-80GB"


def verdicts(adapter: InMemoryAdapter, nodes: list[str]) -> dict[str, str]:
    done = adapter.run_on_nodes(nodes, ["bench"], env={}, timeout_s=1)
    return {r["node"]: r["verdict"] for r in map(json.loads, done.stdout.splitlines())}


def test_the_file_is_read_at_each_benchmark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "unhealthy.json"
    monkeypatch.setenv("CENTRALITY_MEMORY_UNHEALTHY", json.dumps({"n1": "fans"}))
    monkeypatch.setenv("CENTRALITY_MEMORY_UNHEALTHY_FILE", str(file))
    adapter = InMemoryAdapter()
    assert verdicts(adapter, ["n1", "n2"]) == {"n1": "fail", "n2": "pass"}  # no file yet
    file.write_text(json.dumps({"n2": "Faulty GPU"}))
    assert verdicts(adapter, ["n1", "n2"]) == {"n1": "fail", "n2": "fail"}
    file.write_text("{}")  # repaired
    assert verdicts(adapter, ["n2"]) == {"n2": "pass"}


def test_each_node_answers_as_its_gpu_model_and_the_datasheet_judges_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A100s at an A100's figures pass; an H100 at them passes its runner (no thresholds) and
    fails the H100 datasheet: the demo's mixed fleet."""
    monkeypatch.setenv("CENTRALITY_MEMORY_GPU_MODELS", json.dumps({"a1": A100}))
    monkeypatch.setenv("CENTRALITY_MEMORY_PERFORMS_AS", json.dumps({"slow": A100}))
    adapter = InMemoryAdapter()
    done = adapter.run_on_nodes(["a1", "h1", "slow"], ["bench"], env={}, timeout_s=1)
    reports = {r["node"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert {n: r["gpus"][0]["model"] for n, r in reports.items()} == {
        "a1": A100, "h1": MODEL, "slow": MODEL
    }  # fmt: skip
    assert reports["a1"]["gpus"][0]["matmul_tflops"] == reports["slow"]["gpus"][0]["matmul_tflops"]
    payloads = {
        n: BenchmarkCompletedPayload.model_validate({k: v for k, v in r.items() if k != "kind"})
        for n, r in reports.items()
    }
    judged = {n: judge(p, p.gpus[0].model) for n, p in payloads.items()}
    assert {n: j.verdict for n, j in judged.items()} == {"a1": "pass", "h1": "pass", "slow": "fail"}
    assert "A100 80GB SXM datasheet" in judged["a1"].basis
    assert "of the H100 SXM datasheet's 989" in judged["slow"].reasons[0]
    inventory = adapter.run_on_nodes(["a1"], [gpu_inventory.__name__], env={}, timeout_s=1)
    assert json.loads(inventory.stdout)["gpus"][0]["name"] == A100


def test_a_simulator_says_its_own_nodes_and_leaves_the_others(tmp_path: Path) -> None:
    file = tmp_path / "unhealthy.json"
    write_unhealthy(file, {"a-1": "broken"}, ["a-1", "a-2"])
    write_unhealthy(file, {"b-1": "broken"}, ["b-1"])
    assert read_unhealthy(file) == {"a-1": "broken", "b-1": "broken"}
    write_unhealthy(file, {"a-2": "fans"}, ["a-1", "a-2"])  # a-1 mended, a-2 broke
    assert read_unhealthy(file) == {"a-2": "fans", "b-1": "broken"}
    assert read_unhealthy(tmp_path / "none.json") == {}
