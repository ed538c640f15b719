"""What a bench prints (`centrality.bench.cli.report`): for people, every figure and its value
whole in an 80-column pipe, however many figures; for machines, one JSON line."""

from __future__ import annotations

import orjson
import pytest

from centrality.bench.cli import report

FIGURES: dict[str, object] = {
    "events": 71920,
    "messages": 18160,
    "rate_eps": 8040,
    "worker_cpu_us_per_event": 116.4,
    "raw_rate_eps": 44876,
    "ratio": 0.179,
    "latency_p50_ms": None,
    "latency_p99_ms": None,
    "probes": 0,
    "background_eps": 5000,
    "worker_from": "/tmp/wt-f7a9db9",
}


def test_every_figure_is_whole_in_a_pipe(capsys: pytest.CaptureFixture[str]) -> None:
    report("bench streams", FIGURES, json=False)
    out = capsys.readouterr().out
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= 80
    for name, value in FIGURES.items():
        row = next(line for line in out.splitlines() if f" {name} " in line)
        assert ("-" if value is None else str(value)) in row, row


def test_machines_get_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    report("bench streams", FIGURES, json=True)
    [line] = capsys.readouterr().out.splitlines()
    assert orjson.loads(line) == FIGURES
