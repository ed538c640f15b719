"""The recording adapter's benchmark fails the nodes its settings or its file name, read anew
at each run, so a simulator that breaks and mends nodes is told the truth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actions.adapters.memory import InMemoryAdapter


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
