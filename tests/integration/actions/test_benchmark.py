"""Benchmark verdicts and parsing with fake results; the real runner with GPUs hidden (no-gpu)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from actions.benchmark.parse import parse_reports
from actions.benchmark.runner import KIND, WrongResults, _nccl_tests, verdict

NCCL = Path(__file__).parents[2] / "fixtures" / "realworld" / "nccl"

GOOD = {"gpu": 0, "matmul_tflops": 700.0, "memory_bandwidth_gbps": 3000.0}


def test_verdicts_against_thresholds() -> None:
    assert verdict([], None, {"min_tflops": 1}) == ("no-gpu", [])
    # `--suites nccl` measures no GPU figures on a node that has GPUs (seen on a 1-GPU H200).
    assert verdict([], None, {}, visible=1) == ("pass", [])
    assert verdict([], 50.0, {"min_busbw_gbps": 100}, visible=2) == (
        "fail",
        ["NCCL bus GB/s 50.0 < 100"],
    )
    assert verdict([GOOD], 400.0, {"min_tflops": 600, "min_busbw_gbps": 300}) == ("pass", [])
    slow = {**GOOD, "gpu": 1, "matmul_tflops": 200.0}
    result, reasons = verdict([GOOD, slow], 100.0, {"min_tflops": 600, "min_busbw_gbps": 300})
    assert result == "fail"
    assert reasons == ["gpu 1: matmul TFLOP/s 200.0 < 600", "NCCL bus GB/s 100.0 < 300"]
    broken = {"gpu": 2, "error": "CUDA error: ECC"}
    assert verdict([broken], None, {}) == ("fail", ["gpu 2: CUDA error: ECC"])


def report(node: str, **kw: object) -> str:
    doc = {"kind": KIND, "node": node, "gpus": [GOOD], "verdict": "pass", **kw}
    return json.dumps(doc)


def test_parse_one_result_per_requested_node() -> None:
    tid = uuid.uuid4()
    stdout = "\n".join(
        ["srun: noise", report("n1"), '{"not": "ours"}', report("n3", verdict="bogus"), "{bad"]
    )
    n1, n2, n3 = parse_reports(stdout, ["n1", "n2", "n3"], tid)
    assert (n1.node, n1.verdict, n1.trigger_id, n1.gpus[0].matmul_tflops) == (
        "n1",
        "pass",
        tid,
        700,
    )
    assert (n2.verdict, n2.reasons) == ("error", ("the node printed no benchmark report",))
    assert n3.verdict == "error" and n3.reasons[0].startswith("unreadable report")


def test_real_runner_without_gpu_reports_no_gpu() -> None:
    # The GPUs are hidden, so the result is the same on a host with or without them.
    no_gpus = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    out = subprocess.run(
        [sys.executable, "-m", "actions.benchmark.runner", "--json", "--node", "n9",
         "--min-tflops", "600"],
        capture_output=True, text=True, check=True, timeout=60, env=no_gpus,
    ).stdout  # fmt: skip
    [parsed] = parse_reports(out, ["n9"])
    assert parsed.verdict == "no-gpu"
    assert parsed.thresholds == {"min_tflops": 600.0}
    assert parsed.gpus == ()
    assert parsed.reasons in {("torch is not installed",), ("no CUDA device is visible",)}


@pytest.mark.parametrize("exit_code", [0, 1])
def test_nccl_tests_that_returned_wrong_data_fail_the_node(
    exit_code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "all_reduce_perf"  # prints a real failed run (see PROVENANCE.md)
    fake.write_text(f"#!/bin/sh\ncat {NCCL / 'inc_switch_4gpu_wrong_counts_failed.txt'}\n"
                    f"exit {exit_code}\n")  # fmt: skip
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(WrongResults, match="216 out-of-bounds values"):
        _nccl_tests(4, 256)
    wrong = "all_reduce_perf: 216 out-of-bounds values (wrong data)"
    assert verdict([GOOD], 400.0, {"min_busbw_gbps": 1}, wrong) == ("fail", [wrong])


def test_nccl_tests_that_passed_give_their_average_bus_bandwidth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "all_reduce_perf"
    fake.write_text(f"#!/bin/sh\ncat {NCCL / 'nccl_tests_issue252_ring_large.txt'}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert _nccl_tests(8, 256) == 95.3009
